# kbench: two commands on a fresh machine with Python 3.10-3.12 and a C++ compiler.
#   make run    set up (first time), then judge the offline models and render notebooks/01_evaluate
#   make test   set up (first time), then the whole test suite (unit, end-to-end, lint, notebooks)
#
# The torch requirement is a variable so that a machine without a GPU never downloads CUDA wheels:
# without nvidia-smi it defaults to the CPU build pinned below; point TORCH_INDEX at
# https://download.pytorch.org/whl/cpu on machines whose package index has no CPU build of it.
PYTHON      ?= python3
VENV        ?= .venv
PY          := $(VENV)/bin/python
HAS_GPU     := $(shell nvidia-smi -L >/dev/null 2>&1 && echo yes)
TORCH       ?= $(if $(HAS_GPU),torch>=2.4,torch==2.13.0)
TORCH_INDEX ?=
KERNEL      ?= kbench
RUN_ID      ?= run-$(shell date +%Y%m%d-%H%M%S)
# model -> number of problems (0 = all); the CPU default keeps `make run` under ten minutes
comma       := ,
RUN_MODELS  ?= $(if $(HAS_GPU),{"reference": 0$(comma) "torch-compile": 0},{"reference": 0$(comma) "torch-compile": 2})
RUNS        := results/runs
PYTEST_ARGS ?=
# without a GPU, tests on two pytest-xdist workers, each test file whole on one, the notebooks all
# on one and in order (tests/xdist_files.py); with a GPU in one process (GPU tests time kernels and
# must not share the GPU); PYTEST_XDIST= runs them in one process anywhere
PYTEST_XDIST ?= $(if $(HAS_GPU),,-n 2 --dist loadfile)
NBVAL       := --nbval-lax --nbval-kernel-name $(KERNEL) --nbval-cell-timeout 1200

.PHONY: setup run search test test-fast test-unit test-notebooks lint-problems index gpu-test bench clean browser figures FORCE

# the torch asked for, in a file that changes only when TORCH or TORCH_INDEX does: `make setup TORCH=...`
# after a first set-up installs that torch (the stamp below depends on it)
$(VENV)/.torch: FORCE
	@mkdir -p $(VENV)
	@echo '$(TORCH) $(TORCH_INDEX)' | cmp -s - $@ || echo '$(TORCH) $(TORCH_INDEX)' > $@

FORCE:

$(VENV)/.installed: pyproject.toml $(VENV)/.torch
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) "$(TORCH)"
	$(PY) -m pip install -q -e '.[test,lab,browser,openai,anthropic,hf,ray$(if $(HAS_GPU),$(comma)dsl)]'
	$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (kbench)" >/dev/null
	touch $@

setup: $(VENV)/.installed

run: setup
	mkdir -p $(RUNS)/$(RUN_ID)
	$(VENV)/bin/papermill notebooks/01_evaluate.ipynb $(RUNS)/$(RUN_ID)/01_evaluate.ipynb -k $(KERNEL) \
	  --cwd notebooks -p run_id $(RUN_ID) -y '{"models": $(RUN_MODELS)}'
	@echo "executed notebook, records and figures: $(RUNS)/$(RUN_ID)/"
	$(if $(HAS_GPU),$(MAKE) search RUN_ID=$(RUN_ID)-search)

# one search (notebooks/03_strategies): evolve with the offline tuner over hand-written Triton solutions;
# on a GPU at full size with a time share per problem, on the CPU the notebook's small defaults
SEARCH_PARAMS ?= $(if $(HAS_GPU),{"filters": ["88_LogSoftmax"$(comma) "96_Triplet"$(comma) "67_Frobenius"$(comma) "93_KLDiv"$(comma) "66_L2Normalize"$(comma) "2_Gemm_BiasAdd_ReLU"]$(comma) "limit": 0$(comma) "params": {"population": 2$(comma) "generations": 50$(comma) "proposals": 2}$(comma) "budget": {"wall_s": 40}$(comma) "timing_budget_s": 0.5},{})
search: setup
	mkdir -p $(RUNS)/$(RUN_ID)
	$(VENV)/bin/papermill notebooks/03_strategies.ipynb $(RUNS)/$(RUN_ID)/03_strategies.ipynb -k $(KERNEL) \
	  --cwd notebooks -p run_id $(RUN_ID) -y '$(SEARCH_PARAMS)'
	@echo "executed search notebook, records and figures: $(RUNS)/$(RUN_ID)/"

# test-unit and test-notebooks in one pytest run, so that the notebooks run beside the unit tests on
# the same two workers (on two cores a third process only slows both). They share no mutable state:
# the tests judge with a build cache of their own (tests/conftest.py) and write under pytest's temp
# folders, the notebooks (first, in their own kernels) under a temporary runs folder
# ($KBENCH_RUNS_ROOT), never the checkout's results/runs/; ports are free ones. The explorer's
# browser test needs Chromium (`make browser` installs it); without it that test skips and says so.
TEST_RUNS  := $(shell mktemp -d -u -t kbench-test-runs-XXXXXX)
test: setup lint-problems
	mkdir -p $(TEST_RUNS)
	KBENCH_RUNS_ROOT=$(TEST_RUNS) $(PY) -m pytest notebooks tests -q $(NBVAL) $(PYTEST_XDIST) $(PYTEST_ARGS); \
	  status=$$?; rm -rf $(TEST_RUNS); exit $$status

test-unit: setup
	KBENCH_RUNS_ROOT=$(TEST_RUNS) $(PY) -m pytest tests -q $(PYTEST_XDIST) $(PYTEST_ARGS); status=$$?; rm -rf $(TEST_RUNS); exit $$status

# the quick loop while editing: every test but the slow end-to-end ones (builds, batches, notebooks) and the GPU's
test-fast: setup
	KBENCH_RUNS_ROOT=$(TEST_RUNS) $(PY) -m pytest tests -q -m "not slow and not gpu" $(PYTEST_XDIST) $(PYTEST_ARGS); status=$$?; rm -rf $(TEST_RUNS); exit $$status

lint-problems: setup
	$(VENV)/bin/kbench lint problems --small --strict --quiet

test-notebooks: setup
	KBENCH_RUNS_ROOT=$(TEST_RUNS) $(PY) -m pytest -q $(NBVAL) notebooks -p no:cacheprovider; status=$$?; rm -rf $(TEST_RUNS); exit $$status

# Chromium for the explorer's browser test, from the OS's packages (Debian: chromium), when missing.
# Without root or apt the test skips and says why; nothing else depends on it.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1 \
	  || { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	         (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	           || echo "browser: could not install chromium; the explorer's browser test will skip"; \
	       else echo "browser: no chromium and no root/apt to install it; the explorer's browser test will skip"; fi; }

# every figure and table of results/ from the committed records and baselines (results/figures/<device>/)
figures: setup
	$(PY) -m kbench_lib.analysis.figures --out results/figures

index: setup
	$(VENV)/bin/kbench index problems --out problems/index.csv

gpu-test:
	python3 -m pytest tests -q -m gpu $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache
