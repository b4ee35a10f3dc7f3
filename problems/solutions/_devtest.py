# TEMPORARY device test harness (to be deleted): python3 problems/solutions/_devtest.py MODE SOLUTION...
import sys, time, importlib.util, traceback
import torch
from pathlib import Path
from kbench_lib.problems import load_problem
from kbench_lib.reference import build_reference, set_flags
from kbench_lib.compare import compare_tensor

mode = sys.argv[1]
for sol in sys.argv[2:]:
    sol = Path(sol)
    prob = load_problem(Path("problems") / sol.parent.name / sol.name)
    tag = f"{sol.parent.name}/{sol.stem}"
    try:
        set_flags()
        spec = importlib.util.spec_from_file_location("cand_" + sol.stem, sol)
        mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
        cfgs = prob.configs(small=False)
        if mode == "time":
            cfgs = cfgs[:1]
        for cfg in cfgs:
            ref, init, inputs = build_reference(prob, cfg, 1234, 777, "cuda")
            inputs = [t.cuda() if isinstance(t, torch.Tensor) else t for t in inputs]
            torch.manual_seed(1234)
            new = mod.ModelNew(*init).cuda()
            sd = ref.state_dict()
            if set(sd) == set(new.state_dict()):
                new.load_state_dict(sd)
            else:
                print(tag, "STATE_DICT_MISMATCH", flush=True)
            set_flags()
            with torch.no_grad():
                exp = ref(*inputs)
                got = new(*inputs)
                torch.cuda.synchronize()
            m, err = compare_tensor(exp.cpu(), got.cpu(), 1e-4)
            print(tag, cfg.name, "OK" if m is None else "MISMATCH " + m.message, f"maxerr={err}", flush=True)
            if mode == "time":
                def t(fn, n=None):
                    with torch.no_grad():
                        for _ in range(3): fn(*inputs)
                        torch.cuda.synchronize()
                        t0 = time.perf_counter(); fn(*inputs); torch.cuda.synchronize(); one = time.perf_counter() - t0
                        n = max(5, min(200, int(0.5 / max(one, 1e-6))))
                        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
                        for a, b in ev:
                            a.record(); fn(*inputs); b.record()
                        torch.cuda.synchronize()
                        ts = sorted(a.elapsed_time(b) for a, b in ev)
                        return ts[len(ts) // 2]
                tr, tn = t(ref), t(new)
                print(tag, f"TIME eager {tr:.4f} ms  new {tn:.4f} ms  speedup {tr / tn:.2f}x", flush=True)
            del ref, new, exp, got, inputs
            torch.cuda.empty_cache()
    except Exception as e:
        print(tag, "ERROR", type(e).__name__, str(e)[-1500:].replace("\n", " | "), flush=True)
