"""The exclusion rule: an annotator's quality figures -> ``ok``, ``warned`` or ``excluded``.

Three criteria, each read from ``gold.AnnotatorQuality``; the status is the
most severe any criterion gives, and every criterion that fired says why in
a plain sentence. With the defaults of ``Policy``:

=============  ====================================  ======================================
criterion      excluded (the rule fires)             warned (near or at the line)
=============  ====================================  ======================================
gold score     below 0.3 after 3 or more gold tasks  below 0.3 with fewer gold tasks, or
                                                     below 0.4 (within 0.1 of the line)
checks         2 or more failed attention checks     1 failed check (one short of the limit)
untouched      more than half of 5 or more           more than half of fewer rankings, or
               rankings submitted in shown order     more than 40% (within 0.1 of the line)
=============  ====================================  ======================================

So *excluded* means the rule fired with enough evidence; *warned* means the
same line was crossed on too little evidence, or the figure sits at or just
short of the line (a gold score of exactly 0.3, an untouched rate of exactly
one half, one failed check). Setting a margin to 0 keeps only the first kind.
The defaults follow the quality issue (#9); two failed checks before rejection
follows Prolific's published attention-check rules.

The untouched line is a share of what chance leaves (issue 40): an answer in the shown
order happens by chance with probability ``c`` (``gold.untouched_chance``: 1/K! for a
strict order of K, 1/2 for a pair, 1/12 for best-worst or the top 2 of 4), so the line is
``c + (1 - c) x untouched_max_rate``, the mean ``c`` of the annotator's answers: about
one half for rankings of six (1/720 moves it by 0.0007), about three quarters for pairs,
where a careful annotator keeps the shown order half the time. Crossing it excludes only
when chance is ruled out too: a careful annotator would give that many untouched answers
or more with probability below ``untouched_alpha`` (the binomial tail at ``c``; 1 in 1,000,
as the rule is tested again after every answer). A ranking of six is never close (3 of 5
by chance: about 1 in 10^8), but 4 of 5 pairs in the shown order happen to one careful
person in five; so a pair annotator is excluded on 10 of 10 or 18 of 20, and only warned
before. A pair answered "equal" is a judgement the format offers, so it is left out of the
rule, unless every answer is "equal" (``gold.annotator_quality``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from core.json import AsDict

from .gold import AnnotatorQuality

OK, WARNED, EXCLUDED = "ok", "warned", "excluded"
_SEVERITY = {OK: 0, WARNED: 1, EXCLUDED: 2}


def chance_tail(k: int, n: int, chance: float) -> float:
    """P(X >= k) for X ~ Binomial(n, chance): how often a careful annotator, whose answers
    match the shown order with probability ``chance``, gives ``k`` or more of ``n``. Summed
    in log space, so a long stream (thousands of answers) cannot overflow a float."""
    if k <= 0:
        return 1.0
    if chance <= 0 or k > n:
        return 0.0
    if chance >= 1:
        return 1.0
    log_c, log_rest = math.log(chance), math.log1p(-chance)
    top = math.lgamma(n + 1)
    terms = (
        top - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * log_c + (n - j) * log_rest
        for j in range(k, n + 1)
    )
    return min(1.0, sum(math.exp(t) for t in terms))


@dataclass(frozen=True)
class Decision(AsDict):
    """An annotator's status and the reasons for it (empty when ``ok``)."""

    status: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Policy:
    """The configurable rule; every field has the documented default.

    ``gold_min_score``, ``gold_min_tasks``: exclude below this gold score after
    this many gold tasks. ``max_failed_checks``: exclude at this many failed
    checks, warn one short of it. ``untouched_max_rate``,
    ``untouched_min_rankings``: exclude above this untouched rate among at least
    this many rankings with a known shown order, when chance (the module docstring)
    would give as many with probability below ``untouched_alpha``. ``*_warn_margin``: how
    close to the line counts as near it.
    """

    gold_min_score: float = 0.3
    gold_min_tasks: int = 3
    gold_warn_margin: float = 0.1
    max_failed_checks: int = 2
    untouched_max_rate: float = 0.5
    untouched_min_rankings: int = 5
    untouched_warn_margin: float = 0.1
    untouched_alpha: float = 0.001

    def __post_init__(self) -> None:
        problems = []
        if not -1 <= self.gold_min_score <= 1:
            problems.append(f"gold_min_score must be in [-1, 1], got {self.gold_min_score}")
        if not 0 <= self.untouched_max_rate <= 1:
            problems.append(f"untouched_max_rate must be in [0, 1], got {self.untouched_max_rate}")
        if not 0 < self.untouched_alpha <= 1:
            problems.append(f"untouched_alpha must be in (0, 1], got {self.untouched_alpha}")
        for name in ("gold_min_tasks", "max_failed_checks", "untouched_min_rankings"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("gold_warn_margin", "untouched_warn_margin"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must be >= 0, got {getattr(self, name)}")
        if problems:
            raise ValueError("invalid quality policy: " + "; ".join(problems))

    def _gold(self, q: AnnotatorQuality) -> tuple[str, str] | None:
        if q.n_gold == 0 or q.gold_score != q.gold_score:  # none, or NaN
            return None
        line = self.gold_min_score
        if q.gold_score < line and q.n_gold >= self.gold_min_tasks:
            return EXCLUDED, (
                f"gold score {q.gold_score:.2f} below {line} after {q.n_gold} gold tasks"
            )
        if q.gold_score < line:
            return WARNED, (
                f"gold score {q.gold_score:.2f} below {line} after {q.n_gold} of "
                f"{self.gold_min_tasks} gold tasks"
            )
        if q.gold_score < line + self.gold_warn_margin:
            return WARNED, f"gold score {q.gold_score:.2f} within {self.gold_warn_margin} of {line}"
        return None

    def _checks(self, q: AnnotatorQuality) -> tuple[str, str] | None:
        failed, limit = q.n_checks_failed, self.max_failed_checks
        if failed >= limit:
            return EXCLUDED, f"{failed} of {q.n_checks} attention checks failed (limit {limit})"
        if failed >= 1 and failed == limit - 1:
            return WARNED, f"{failed} of {q.n_checks} attention checks failed (limit {limit})"
        return None

    def _untouched(self, q: AnnotatorQuality) -> tuple[str, str] | None:
        n, rate = q.n_with_shown_order, q.untouched_rate
        chance = q.untouched_chance if q.untouched_chance == q.untouched_chance else 0.0
        line = chance + (1 - chance) * self.untouched_max_rate
        if n == 0:
            return None
        how = "in the shown order or all equal" if q.n_all_equal else "in the shown order"
        said = f"{q.n_untouched} of {n} rankings submitted {how}"
        if rate > line and n < self.untouched_min_rankings:
            return WARNED, f"{said} (more than {line:.0%}, before {self.untouched_min_rankings})"
        if rate > line and chance_tail(q.n_untouched, n, chance) >= self.untouched_alpha:
            return WARNED, f"{said} (more than {line:.0%}, as often as chance allows)"
        if rate > line:
            return EXCLUDED, f"{said} (more than {line:.0%})"
        if rate > line - self.untouched_warn_margin:
            return WARNED, f"{said} (within {self.untouched_warn_margin:.0%} of {line:.0%})"
        return None

    def fired(self, quality: AnnotatorQuality) -> dict[str, tuple[str, str]]:
        """Each criterion that fires on one annotator (``gold``, ``checks``, ``untouched``):
        the status it gives and its reason. What a crowd platform's review reads to tell
        an exclusion on attention checks from one on gold tasks or untouched rankings."""
        rules = {"gold": self._gold, "checks": self._checks, "untouched": self._untouched}
        return {name: found for name, rule in rules.items() if (found := rule(quality))}

    def decide(self, quality: AnnotatorQuality) -> Decision:
        """The status the rule gives one annotator, with every reason that fired."""
        fired = list(self.fired(quality).values())
        status = max((s for s, _ in fired), key=_SEVERITY.__getitem__, default=OK)
        return Decision(status=status, reasons=tuple(reason for _, reason in fired))
