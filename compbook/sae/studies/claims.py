"""Part C's claims table: every claim of the S2AE paper, re-read from stored runs (chapters 15 and 16).

Each row is one claim in one setting: the paper's figure, what the miniature measured (S2AE - vanilla paired by
seed, or a value over seeds, with its 95% t-interval), the **verdict** and the **reading**:

* verdict: the book's rule, :func:`compbook.stats.verdict` (the one Part A's claims table uses), applied to the
  interval of the difference against 0 (reproduced: it excludes 0 on the paper's side; not reproduced: on the
  other side; inconclusive: it holds 0), or to a value's interval against the paper's threshold (EV > 0.99);
* reading: :func:`compbook.stats.reread`, that verdict refined by the paper's size (direction only: under
  half the paper's effect; not reproduced: the interval holds 0 but excludes half the paper's effect).

The paper's figures are :data:`compbook.sae.paper.CLAIMS`. Its relative figures (mIoU, coherence, consistency,
monosemanticity) are read as relative to vanilla's value here, the L0 drop as the same share of this k, the
identification gap in points: all our readings (the size each entry of ``CLAIMS`` carries).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import checks
from ...stats import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, difference_row, fmt, t_interval, verdict
from .. import experiment as ex
from ..paper import CLAIMS
from ...stats import reread

COLUMNS = ("claim", "paper", "setting", "measure", "measured", "verdict", "reading")
#: Short names of the object-VLM variants (:data:`compbook.sae.studies.objregions.VARIANTS`) in the settings.
VARIANT_NAMES = {"causal (the book's)": "causal, retrained", "4 prefix tokens": "4 prefix tokens",
                 "bidirectional patches": "bidirectional"}
#: The readings of :func:`compbook.stats.reread`, shortened for the page.
SHORT_READINGS = {"direction only (under half the paper's effect)": "direction only (< half)",
                  "not reproduced (half the paper's effect excluded)": "not reproduced (< half)",
                  "not reproduced (opposite direction)": "not reproduced (opposite)"}


def claim_row(claim: str, setting: str, measure: str, mean: float, half: float, vanilla: float = float("nan"),
              k: int | None = None) -> dict:
    """One row of the table: ``mean`` and 95% ``half`` of S2AE - vanilla (or of the value, for "EV above 99%"),
    read against :data:`CLAIMS`' figure (``vanilla``: vanilla's mean, for relative sizes; ``k`` for L0)."""
    if claim not in CLAIMS:
        raise ValueError(f"claim={claim!r}: expected one of {tuple(CLAIMS)}")
    paper, sign, (kind, size) = CLAIMS[claim]
    checks.real(mean, "mean")
    if not np.isfinite(half):
        return {"claim": claim, "paper": paper, "setting": setting, "measure": measure,
                "measured": f"{mean:+.3f} (one seed)", "verdict": "inconclusive", "reading": "inconclusive (one seed)"}
    row = difference_row(mean, half)
    if claim == "EV above 99%":
        v = verdict(row, size, "greater")
        return {"claim": claim, "paper": paper, "setting": setting, "measure": measure,
                "measured": fmt(row, 3), "verdict": v, "reading": v}
    if kind == "relative":
        size = size * checks.real(vanilla, "vanilla")
    elif kind == "share of k":
        size = size * checks.integer(k, "k")
    return {"claim": claim, "paper": paper, "setting": setting, "measure": measure,
            "measured": fmt(row, 3), "verdict": verdict(row, 0, "greater" if sign > 0 else "less"),
            "reading": reread(mean, half, sign, size)}


def _paired(df: pd.DataFrame, column: str, a: str, b: str) -> tuple[float, float, float]:
    """(mean, half) of ``b - a`` paired by seed, and ``a``'s mean."""
    m, h = ex.paired_difference(df, column, a, b)
    return m, h, float(df[df.method == a][column].mean())


def image_rows(df: pd.DataFrame, setting: str, s2ae: str, k: int) -> list:
    """EV, L0 and mIoU rows of one setting: ``df`` has vanilla and ``s2ae`` rows (columns method, seed, EV,
    L0 patches, mIoU)."""
    ev = df[df.method == s2ae]["EV"].to_numpy(float)
    rows = [claim_row("EV above 99%", setting, "S2AE EV", *t_interval(ev))]
    for claim, col in (("L0 lower", "L0 patches"), ("mIoU higher", "mIoU")):
        m, h, van = _paired(df, col, "vanilla", s2ae)
        rows.append(claim_row(claim, setting, col, m, h, van, k))
    return rows


def table(study: pd.DataFrame | None = None, regions: pd.DataFrame | None = None,
          objsae: pd.DataFrame | None = None, coherence: pd.DataFrame | None = None,
          identification: pd.DataFrame | None = None, k: int = 32, lam: float = 0.01) -> pd.DataFrame:
    """The claims table from what is given (each frame optional; its rows are left out when it is None):

    * ``study``: :func:`compbook.sae.studies.study.study_table` rows (k, lambda, method, seed, EV, L0 patches, mIoU):
      the book's model at ``k``, S2AE at ``lam`` with the paper's 20 regions;
    * ``regions``: :func:`compbook.sae.studies.study.region_table` rows: the object-scale region counts;
    * ``objsae``: :func:`compbook.sae.studies.objsae.table` rows: the object-VLM variants, every region count;
    * ``coherence``: one row per (method, seed) with chapter 16's coherence definitions, ``mono image``,
      ``mono text`` (:func:`compbook.sae.coherence.coherence_table` merged with the monosemanticity);
    * ``identification``: :func:`compbook.sae.interpret.identification_table` rows.
    """
    k = checks.integer(k, "k")
    s2ae = ex.method_name(lam)
    rows = []
    if study is not None:
        g = study[(study.k == k) & study["lambda"].isin((0.0, lam))]
        if g.empty:
            raise ValueError(f"study: no rows at k = {k} and lambda in (0, {lam})")
        rows += image_rows(g, f"k={k}, book's VLM, 20 regions", s2ae, k)
    if regions is not None:
        for n, g in regions[regions.regions > 0].groupby("regions", sort=False):
            if int(n) == 20:
                continue
            both = pd.concat([regions[regions.method == "vanilla"], g])
            rows += image_rows(both, f"k={k}, book's VLM, {int(n)} regions", g.method.iloc[0], k)
    if objsae is not None:
        for (layout, variant), g in objsae.groupby(["layout", "variant"], sort=False):
            name = VARIANT_NAMES.get(variant, variant)
            for n, s in sorted(g[g.regions > 0].groupby("regions"), key=lambda x: -x[0]):
                both = pd.concat([g[g.method == "vanilla"], s])
                rows += image_rows(both, f"k={k}, {name} ({layout}), {int(n)} regions", s.method.iloc[0], k)
    if coherence is not None:
        rows += coherence_rows(coherence, f"k={k}, book's VLM", s2ae)
    if identification is not None:
        rows += identification_rows(identification, f"k={k}, book's VLM", s2ae)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def coherence_rows(df: pd.DataFrame, setting: str, s2ae: str) -> list:
    """Coherence (every definition column of ``df`` but the monosemanticity ones) and monosemanticity rows."""
    from ..coherence import DEFINITIONS, definition_name

    rows = []
    for name in (definition_name(*d) for d in DEFINITIONS):
        if name in df.columns:
            m, h, van = _paired(df, name, "vanilla", s2ae)
            rows.append(claim_row("cross-modal coherence higher", setting, f"coherence, {name}", m, h, van))
    for claim, col in (("image monosemanticity higher", "mono image"),
                       ("language monosemanticity higher", "mono text")):
        m, h, van = _paired(df, col, "vanilla", s2ae)
        rows.append(claim_row(claim, setting, col, m, h, van))
    return rows


def identification_rows(df: pd.DataFrame, setting: str, s2ae: str) -> list:
    """The pipeline's cross-modal judgement ("agree", hierarchical) S2AE - vanilla, and hierarchical - direct
    identification for each method."""
    m, h, van = _paired(df, "agree", "vanilla, hierarchical", f"{s2ae}, hierarchical")
    rows = [claim_row("cross-modal consistency higher", setting, "agree (hierarchical)", m, h, van)]
    for method, label in (("vanilla", "vanilla"), (s2ae, "S2AE")):
        m, h = ex.paired_difference(df, "identified", f"{method}, direct", f"{method}, hierarchical")
        rows.append(claim_row("hierarchical identifies more than direct", setting,
                              f"identified, hier. - direct, {label}", m, h))
    return rows


#: Short names of the claims and settings for the page (:func:`short`).
SHORT_CLAIMS = {"EV above 99%": "EV > 0.99", "L0 lower": "L0 lower", "mIoU higher": "mIoU higher",
                "cross-modal coherence higher": "coherence up", "cross-modal consistency higher": "consistency up",
                "image monosemanticity higher": "mono image up", "language monosemanticity higher": "mono text up",
                "hierarchical identifies more than direct": "hier. > direct"}
SHORT_SETTINGS = {"book's VLM": "book", "causal, retrained": "causal*", "4 prefix tokens": "prefix",
                  "bidirectional": "bidi", " regions": " reg."}


def short(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`table`'s ``df`` for an 80-character page: indexed by the claim's short name, the setting without
    its k (one k a table) and with the measure where it is not the claim's own ("book: next token / bimodal"),
    the paper's figure left out (shown apart), the readings shortened (:data:`SHORT_READINGS`)."""
    missing = set(COLUMNS) - set(df.columns)
    if missing:
        raise ValueError(f"df: missing columns {sorted(missing)}")
    setting = df.setting.str.replace(r"^k=\d+, ", "", regex=True)
    for old, new in SHORT_SETTINGS.items():
        setting = setting.str.replace(old, new, regex=False)
    own = df.measure.isin(("S2AE EV", "L0 patches", "mIoU", "mono image", "mono text"))
    measure = df.measure.str.replace("coherence, ", "").str.replace("identified, hier. - direct, ", "")
    setting = setting.where(own, setting + ": " + measure)
    out = pd.DataFrame({"claim": df.claim.replace(SHORT_CLAIMS), "setting": setting, "measured": df.measured,
                        "verdict": df.verdict, "reading": df.reading.replace(SHORT_READINGS)})
    return out.set_index("claim")


def tally(df: pd.DataFrame) -> pd.DataFrame:
    """Per claim of :func:`table`'s ``df``: the number of settings read and how many gave each verdict."""
    missing = {"claim", "verdict"} - set(df.columns)
    if missing:
        raise ValueError(f"df: missing columns {sorted(missing)}")
    out = pd.crosstab(df.claim, df.verdict).reindex(columns=[REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE],
                                                    fill_value=0)
    out.insert(0, "settings", out.sum(axis=1))
    order = [c for c in CLAIMS if c in out.index]
    out = out.loc[order]
    out.index = [SHORT_CLAIMS[c] for c in order]
    out.index.name, out.columns.name = "claim", None
    return out
