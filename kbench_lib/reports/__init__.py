"""What a run shows: its plots (:mod:`.plots`), a search's metrics and plots (:mod:`.search_metrics`,
:mod:`.search_plots`), the kernel lab's history of attempts (:mod:`.lab_history`) and a verdict in
words, as ``kbench eval`` prints it (:mod:`.verdict_text`).
"""
