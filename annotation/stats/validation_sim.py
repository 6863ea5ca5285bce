"""Synthetic validation studies with a planted effect (pure numpy; the Django simulation is
``annotation/studies/simulation.py``).

Each annotator ranks ``rankings`` tasks, task ``j`` of occupation ``j mod
occupations``; a task holds K images, K/2 from each condition. Image ``i`` in
annotator ``a``'s ranking of a task of occupation ``o`` has the utility
(higher = less stereotypical)::

    u = treated_i * (effect + A_a + O_o) + e_i
    A_a ~ N(0, annotator_sd^2),   O_o ~ N(0, occupation_sd^2)

with ``e`` Gumbel (the ranking is then Plackett-Luce: the least stereotypical
image is drawn first with probability proportional to exp(u)) or standard
normal (Thurstone). Images are ranked by ``u`` ascending, so rank 1 is the
most stereotypical (position 0) and the card's orientation holds: an
``effect`` > 0 moves the treatment's images up. ``effect`` = 0 with both SDs 0
is a null study. Whole batches of studies are drawn at once (``simulate``);
``records`` turns one study into ``ValidationRecord``s for ``validation.report``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from .validation import ValidationRecord

Noise = Literal["gumbel", "normal"]


@dataclass(frozen=True)
class Simulated:
    """Ranks 1..K of a batch of studies: ``(studies, annotators, rankings, K/2)`` per condition."""

    baseline_ranks: np.ndarray
    treatment_ranks: np.ndarray
    occupation: np.ndarray  # (rankings,): the occupation index of each ranking

    def annotator_means(self) -> tuple[np.ndarray, np.ndarray]:
        """``(studies, annotators)`` mean ranks of the baseline and the treatment images."""
        return self.baseline_ranks.mean(axis=(2, 3)), self.treatment_ranks.mean(axis=(2, 3))


def simulate(
    rng: np.random.Generator,
    *,
    studies: int = 1,
    annotators: int = 20,
    rankings: int = 10,
    occupations: int = 10,
    k: int = 6,
    effect: float = 0.0,
    annotator_sd: float = 0.0,
    occupation_sd: float = 0.0,
    noise: Noise = "gumbel",
) -> Simulated:
    """Draw ``studies`` independent studies at once (see the module docstring)."""
    if k < 2 or k % 2:
        raise ValueError(f"K must be even and >= 2 (K/2 images per condition), got {k}")
    if min(studies, annotators, rankings, occupations) < 1:
        raise ValueError("studies, annotators, rankings and occupations must be >= 1")
    m = k // 2
    occupation = np.arange(rankings) % occupations
    shift = (
        effect
        + annotator_sd * rng.standard_normal((studies, annotators, 1))
        + occupation_sd * rng.standard_normal((studies, 1, occupations))[:, :, occupation]
    )  # (studies, annotators, rankings)
    size = (studies, annotators, rankings, k)
    e = rng.gumbel(size=size) if noise == "gumbel" else rng.standard_normal(size)
    treated = np.arange(k) < m  # the first K/2 images are the treatment's
    u = e + treated * shift[..., None]
    ranks = u.argsort(-1).argsort(-1) + 1
    return Simulated(ranks[..., m:], ranks[..., :m], occupation)


def records(
    sim: Simulated,
    study: int = 0,
    *,
    baseline: str = "original",
    treatment: str = "optimised",
    groups: dict[str, list[str]] | None = None,
) -> list[ValidationRecord]:
    """One study of ``sim`` as records; ``groups={field: values}`` gives annotator ``a`` value
    ``a mod len(values)`` of each field. Annotators are ``ann000``.., tasks ``<occupation>-<n>``."""
    _, a_n, r_n, m = sim.baseline_ranks.shape
    occ_n = int(sim.occupation.max()) + 1
    out = []
    for a in range(a_n):
        group = {f: values[a % len(values)] for f, values in (groups or {}).items()}
        for j in range(r_n):
            occ = f"occ{sim.occupation[j]:02d}"
            task = f"{occ}-{j // occ_n}"
            for condition, ranks in (
                (baseline, sim.baseline_ranks),
                (treatment, sim.treatment_ranks),
            ):
                for rank in ranks[study, a, j]:
                    out.append(
                        ValidationRecord(
                            f"ann{a:03d}", occ, task, condition, int(rank) - 1, 2 * m, group
                        )
                    )
    return out


def planted_order(treated: np.ndarray, effect: float, rng: np.random.Generator) -> np.ndarray:
    """One annotator's order of one task's images under the model above (no annotator or
    occupation shift): indices, most stereotypical first; ``treated[i]`` marks the
    treatment's images. ``simulate_annotators --study --effect`` ranks with it."""
    u = rng.gumbel(size=len(treated)) + np.asarray(treated, dtype=np.float64) * effect
    return np.argsort(u, kind="stable")
