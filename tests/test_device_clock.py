"""The device clock's reading of a trace: windows from the profiler's own records, outermost only;
device spans of one GPU, ranges left out (kbench_lib.measure.device_clock)."""
import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

from kbench_lib.measure import device_clock


class Record:
    """A profiler event record as ``kineto_results.events()`` gives it (methods, not attributes)."""

    def __init__(self, name, kind, start_us, dur_us, index=0, annotation=False):
        self._n, self._k, self._s, self._d, self._i, self._a = name, kind, start_us, dur_us, index, annotation

    def name(self):
        return self._n

    def device_type(self):
        return self._k

    def start_ns(self):
        return int(self._s * 1000)

    def duration_ns(self):
        return int(self._d * 1000)

    def device_index(self):
        return self._i

    def is_user_annotation(self):
        return self._a


W, CPU, CUDA = device_clock.WINDOW, DeviceType.CPU, DeviceType.CUDA


def test_windows_are_the_outermost_ranges_and_spans_this_gpus_activities():
    records = [
        Record(W, CPU, 0, 100, annotation=True),
        Record(W, CPU, 10, 20, annotation=True),  # a range the call opened under the same name: part of the call
        Record(W, CPU, 200, 100, annotation=True),
        Record("aten::mm", CPU, 5, 50),
        Record("gemm", CUDA, 20, 30),
        Record(W, CUDA, 15, 60, annotation=True),  # the range mirrored over its kernels: not device work
        Record("gemm", CUDA, 40, 30, index=1),  # another GPU of the process
        Record("relu", CUDA, 220, 5),
    ]
    windows, spans = device_clock.windows_and_spans(records, 0)
    assert windows == [(0.0, 100.0), (200.0, 300.0)]
    assert spans == [(20.0, 30.0), (220.0, 5.0)]
    assert device_clock.busy_per_window(windows, spans) == [30.0, 5.0]


def test_outermost_drops_ranges_inside_or_across_an_earlier_one():
    assert device_clock.outermost([(50, 60), (0, 100), (90, 120), (130, 140)]) == [(0, 100), (130, 140)]
    assert device_clock.outermost([]) == []


def test_windows_from_a_real_trace_on_the_cpu():
    """The profiler's records on this torch: one window per call, a nested range of the same name
    inside a call counted with it, not as a call of its own."""
    calls = 4
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(calls):
            with record_function(W):
                a = torch.randn(64, 64)
                with record_function(W):  # what a candidate could open inside its forward
                    a = a @ a
    windows, spans = device_clock.windows_and_spans(prof.profiler.kineto_results.events(), 0)
    assert len(windows) == calls and spans == []
    assert all(b > a for a, b in windows)
    assert all(w1[0] > w0[1] for w0, w1 in zip(windows, windows[1:]))
