# Set-up is idempotent: .venv is created on first use and re-synced when the
# dependency files change. Everything installs through constraints.txt so pip
# never resolves a newer torch (the CPU wheel 2.13.0 is the tested one).
# setuptools is named so the pinned one replaces whatever `python -m venv` bundled
# (tensorboard needs its pkg_resources). `make setup VENV=/tmp/v` builds a venv elsewhere.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: setup test train bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet -c constraints.txt torch==2.13.0 setuptools
	$(VENV)/bin/python -m pip install --quiet -c constraints.txt -e '.[test,ray,gymnasium,pettingzoo]'
	touch $(STAMP)

setup: $(STAMP)

RUN_ID ?= 3DBall

train: $(STAMP)
	$(VENV)/bin/agents-learn config/ppo/3DBall.yaml --run-id=$(RUN_ID) --force
	@echo "Results: results/$(RUN_ID) (3DBall.onnx, checkpoints in 3DBall/, run_logs/)."
	@echo "TensorBoard: $(VENV)/bin/tensorboard --logdir results"

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -q -n 2 --dist loadfile

bench: $(STAMP)
	for script in benchmarks/[!_]*.py; do $(VENV)/bin/python $$script; done

clean:
	rm -rf $(VENV) build *.egg-info
