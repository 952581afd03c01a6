# Every target sets up what it needs: a fresh clone runs `make demo` or `make test` directly.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# bench_otel.py again on the OpenTelemetry SDK a plain `pip install hookscope` resolves to: the
# test venv carries google-adk, which pins the SDK to 1.44, and OTelHook's standing against
# hand-written SDK calls follows the SDK's own metric cost (README, Development).
OTEL_VENV  ?= .venv-otel-latest
OTEL_STAMP := $(OTEL_VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test bench lint format clean debian-deps

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 10), "hookscope needs Python >= 3.10"'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[cli,prometheus,test,lint,bench,openai-agents]'
	rm -f $(VENV)/.installed-* && touch $@

$(OTEL_STAMP): pyproject.toml
	test -x $(OTEL_VENV)/bin/python || $(PYTHON) -m venv $(OTEL_VENV)
	$(OTEL_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --upgrade -e '.[instruments]'
	rm -f $(OTEL_VENV)/.installed-* && touch $@

demo: $(STAMP)
	$(VENV)/bin/hookscope demo

# Prometheus and Alertmanager from Debian, for the end-to-end tests (they fail in CI without
# them; elsewhere they skip, saying why, when the packages cannot be installed).
debian-deps:
	scripts/install-debian-deps.sh || [ -z "$$CI" ]

test: $(STAMP) debian-deps
	$(PY) -m pytest

bench: $(STAMP) $(OTEL_STAMP)
	$(PY) bench/run.py
	@echo "=== bench_otel.py on the newest OpenTelemetry SDK ($(OTEL_VENV))"
	$(OTEL_VENV)/bin/python bench/bench_otel.py
	$(PY) bench/compare_antigravity_otel.py
	$(PY) bench/compare_openai_agents.py
	$(PY) bench/compare_claude_openinference.py

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench examples
	$(VENV)/bin/ruff format --check src tests bench examples
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff format src tests bench examples
	$(VENV)/bin/ruff check --fix src tests bench examples

clean:
	rm -rf $(VENV) $(OTEL_VENV) .pytest_cache .mypy_cache .ruff_cache .hookscope dist
