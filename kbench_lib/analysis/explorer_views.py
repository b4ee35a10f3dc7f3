"""What the explorer shows for one record, as HTML (pure functions of a record row, so they are
tested without a browser): the verdict, timings, profile, fusion summary, and the reference and
candidate side by side with their diff."""
from __future__ import annotations

import difflib
import html
import math

import pandas as pd

from ..scoring import metrics
from .failures import compile_excerpt, failure_class, threat_classes
from .fusion import as_counts, as_kernels, fusion_row
from .style import OUTCOME

MONO = "font-family:var(--jp-code-font-family,monospace);font-size:12px"


def esc(v) -> str:
    return html.escape("" if v is None else str(v))


def _str(v) -> str:
    return v if isinstance(v, str) else ""


def _num(v, fmt: str = "{:.4g}") -> str:
    try:
        return "–" if v is None or math.isnan(float(v)) else fmt.format(float(v))
    except (TypeError, ValueError):
        return esc(v)


def outcome_of(row: dict) -> str:
    if isinstance(row.get("failure"), str):
        return row["failure"]
    flags = row.get("flags")
    return "flagged" if bool(row.get("correct")) and flags is not None and len(flags) else ("trusted" if row.get("correct") else "failed")


def _table(pairs, header=None) -> str:
    head = "".join(f"<th style='text-align:left;padding:2px 8px'>{esc(h)}</th>" for h in header) if header else ""
    body = "".join("<tr>" + "".join(f"<td style='padding:2px 8px'>{c}</td>" for c in r) + "</tr>" for r in pairs)
    return f"<table class='kb-table'>{'<tr>' + head + '</tr>' if head else ''}{body}</table>"


def verdict_html(row: dict) -> str:
    """The verdict's headline: outcome badge, problem, model, sample and turn, class, flags, message."""
    out = outcome_of(row)
    color = OUTCOME["trusted"] if out == "trusted" else OUTCOME["flagged"] if out == "flagged" else OUTCOME["failed"]
    badge = f"<span class='kb-verdict' style='background:{color};color:white;padding:2px 8px;border-radius:3px'>{esc(out)}</span>"
    head = (f"<div style='font-size:14px'>{badge} <b>{esc(row.get('problem'))}</b> · model {esc(row.get('model'))} · "
            f"sample {esc(row.get('sample'))} · turn {esc(row.get('turn'))} · {esc(row.get('backend'))} on {esc(row.get('device_name') or row.get('device'))}</div>")
    parts = [head]
    if isinstance(row.get("failure"), str):
        parts.append(f"<div>failure class: <code>{esc(failure_class(row))}</code></div>")
    flags = list(row.get("flags") if row.get("flags") is not None else [])
    if flags:
        items = "".join(f"<li><code>{esc(f)}</code></li>" for f in flags)
        parts.append(f"<div>flags ({esc(', '.join(threat_classes(flags)))}):<ul class='kb-flags'>{items}</ul></div>")
    msg = row.get("message") if isinstance(row.get("message"), str) else None
    if row.get("failure") == "compile_error":  # the compiler's own words first, not the build tool's traceback
        msg = compile_excerpt(_str(row.get("error")) + "\n" + _str(msg)) or msg
    if msg:
        parts.append(f"<pre class='kb-message' style='{MONO};white-space:pre-wrap;max-height:14em;overflow:auto;background:#f6f6f6;padding:4px'>{esc(msg)}</pre>")
    return "\n".join(parts)


def timings_html(row: dict) -> str:
    """Times and speedups, with what the timing is (kernel timing or not)."""
    kind = metrics.timing_kind(pd.DataFrame([{k: row.get(k) for k in ("device", "small", "backend")}])).iloc[0]
    rows = [
        ("timing", esc(metrics.TIMING_KINDS.get(kind, kind))),
        ("candidate ms (median)", _num(row.get("runtime_ms"))),
        ("spread p10 – p90 ms", f"{_num(row.get('runtime_p10_ms'))} – {_num(row.get('runtime_p90_ms'))}"),
        ("device-busy ms", _num(row.get("device_ms"))),
        ("eager ms", _num(row.get("baseline_eager_ms"))),
        ("torch.compile ms", _num(row.get("baseline_compile_ms"))),
        ("speedup over eager", _num(row.get("speedup_eager"), "{:.3g}x") + ("" if kind == "gpu" else " (not a kernel speedup)")),
        ("speedup over torch.compile", _num(row.get("speedup_compile"), "{:.3g}x")),
        ("speed of light ms", _num(row.get("sol_ms"))),
        ("max abs error", _num(row.get("max_abs_err"))),
        ("seeds / variants checked", f"{esc(row.get('seeds_checked'))} / {esc(row.get('variants_checked'))}"),
    ]
    return "<div class='kb-timings'><b>Timings</b>" + _table(rows) + "</div>"


def profile_html(row: dict) -> str:
    """The candidate's device kernels and ATen compute ops beside the reference's."""
    kernels = as_kernels(row.get("profile_kernels"))
    cand, ref = as_counts(row.get("profile_ops")), as_counts(row.get("reference_ops"))
    if row.get("reference_ops") is None and kernels is None:
        n = row.get("n_kernels")
        extra = f" It launched {_num(n, '{:.0f}')} device kernels." if n is not None and not (isinstance(n, float) and math.isnan(n)) else ""
        return f"<div class='kb-profile'><b>Profile</b><p>No profile in this record (older record, failed before profiling, or guards off).{extra}</p></div>"
    ops = sorted(set(cand) | set(ref))
    op_rows = [(f"<code>{esc(o)}</code>", esc(ref.get(o, 0)), esc(cand.get(o, 0))) for o in ops]
    html_ops = _table(op_rows, ["ATen compute op", "reference", "candidate"]) if ops else "<p>No ATen compute op ran in either forward.</p>"
    if kernels:
        k_rows = [(f"<code>{esc(k['name'][:90])}</code>", esc(k.get("op") or "own"), esc(k.get("count")), _num(k.get("device_us"), "{:.1f}"))
                  for k in kernels[:30]]
        html_k = _table(k_rows, ["device kernel", "launched by", "count", "device us"])
    else:
        html_k = "<p>No device kernels recorded (a CPU run launches none).</p>"
    return f"<div class='kb-profile'><b>Profile</b>{html_ops}{html_k}</div>"


def fusion_html(row: dict, compile_row: dict | None = None) -> str:
    """Which reference operators the candidate took over and which it left in the library, beside
    torch.compile's decisions for the same problem where recorded."""
    if row.get("reference_ops") is None:
        return "<div class='kb-fusion'><b>Fusion</b><p>No profile in this record: fusion decisions unknown.</p></div>"
    f = fusion_row(row)
    rows = [("reference operator calls", esc(f["reference_ops"])),
            ("taken into own kernels", esc(f["replaced"] or "none")),
            ("left in the library", esc(f["in_library"] or "none")),
            ("extra library ops", esc(f["extra"] or "none")),
            ("kernels: candidate / reference", f"{_num(f['n_kernels'], '{:.0f}')} / {_num(f['reference_n_kernels'], '{:.0f}')}")]
    if compile_row is not None and compile_row.get("reference_ops") is not None:
        c = fusion_row(compile_row)
        rows += [("torch.compile took", esc(c["replaced"] or "none")), ("torch.compile left in the library", esc(c["in_library"] or "none"))]
    else:
        rows.append(("torch.compile", "no torch-compile record with a profile for this problem"))
    return "<div class='kb-fusion' style='margin-left:24px'><b>Fusion</b>" + _table(rows) + "</div>"


def side_by_side_html(reference: str | None, candidate: str | None) -> str:
    def pane(title, text):
        body = esc(text) if text else "(source not available for this record)"
        return (f"<div style='min-width:0'><b>{title}</b><pre style='{MONO};max-height:30em;overflow:auto;"
                f"background:#f6f6f6;padding:4px;white-space:pre;margin:0'>{body}</pre></div>")
    both = pane("Reference (problem)", reference) + pane("Candidate", candidate)
    return f"<div class='kb-sources' style='display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:8px'>{both}</div>"


def diff_html(reference: str | None, candidate: str | None) -> str:
    """A unified diff of reference and candidate, added lines green, removed red."""
    if not reference or not candidate:
        return "<p>Diff not available: a source is missing.</p>"
    lines = difflib.unified_diff(reference.splitlines(), candidate.splitlines(), "reference", "candidate", lineterm="", n=2)
    out = []
    for line in lines:
        style = "color:#009E73" if line.startswith("+") else "color:#D55E00" if line.startswith("-") else "color:#555"
        out.append(f"<span style='{style}'>{esc(line)}</span>")
    return f"<pre class='kb-diff' style='{MONO};max-height:30em;overflow:auto'>{chr(10).join(out)}</pre>"
