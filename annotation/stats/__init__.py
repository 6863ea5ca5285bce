"""Annotation quality as a plain library: no Django import anywhere below here.

Plain records in (``records.RankingRecord``), dataclasses and dicts out, so the
same figures serve the ``quality`` command, the staff API and the dashboard.

* ``records``: the input type and its checks.
* ``bootstrap``: the task-cluster bootstrap and the ``Estimate`` it returns.
* ``agreement``: Kendall's W, Krippendorff's alpha, breakdowns, annotator
  reliability (leave-one-out Spearman).
* ``position_bias``: shown vs final position, untouched rate, shown-final tau.
* ``gold``: gold references, attention checks, the per-annotator summary.
* ``policy``: the configurable rule that marks an annotator warned or excluded.
* ``validation``: a validation study's statistics (mean ranks per condition,
  Welch, paired t, Wilcoxon, cluster bootstrap, effect sizes).
* ``validation_report``: the breakdowns and the assembled report (one JSON-safe dict).
* ``validation_sim``: synthetic validation studies with a planted effect.
* ``power``: power and sample size of the paired and Welch t-tests.
* ``tiers``: a ranking as tiers, the one representation of every question format.
* ``split_half``: split-half reliability of item scores, for every format.
* ``pair_fit``: a Bradley-Terry fit over the pairs answers state, beside the counting score.
* ``effort``: the planning seconds of an answer per format; quotas in a format's answers.

Formulas and sources: each module's docstring; the definitions in docs/design.md.
"""
