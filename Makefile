# Two commands for a newcomer: `make demo` (the main job) and `make test` (all tests).
# Both bootstrap everything on a fresh machine: venv, pinned ROS 2 wheels, colcon build.

SHELL := /bin/bash
PYTHON ?= python3
# The venv lives outside the source tree: CMake refuses exported include paths
# (numpy's, from the venv) that sit inside the package's source directory.
VENV ?= $(HOME)/.cache/working_memory/venv-$(shell cksum < tools/requirements.txt | cut -d' ' -f1)
export WM_VENV := $(VENV)
BUILD ?= .build
export WM_BUILD := $(BUILD)
ROSENV := tools/rosenv
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
export ROS_DOMAIN_ID ?= 42

SOURCES := $(shell find working_memory msg srv launch config -type f ! -name '*.pyc' 2>/dev/null) \
	CMakeLists.txt package.xml

.PHONY: all setup build demo test bench clean

all: test

setup: $(VENV)/.ready

$(VENV)/.ready: tools/requirements.txt tools/fix_cmake_paths.py
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r tools/requirements.txt
	$(VENV)/bin/python tools/fix_cmake_paths.py
	touch $@

build: $(BUILD)/.built

$(BUILD)/.built: $(VENV)/.ready $(SOURCES)
	$(ROSENV) colcon --log-base $(BUILD)/log build --paths . \
		--build-base $(BUILD)/build --install-base $(BUILD)/install \
		--symlink-install --event-handlers console_cohesion- summary- \
		--cmake-args -DBUILD_TESTING=OFF -DPython3_EXECUTABLE=$(abspath $(VENV))/bin/python
	touch $@

demo: build
	$(ROSENV) python -P -m working_memory.demo $(ARGS)

test: build
	$(ROSENV) pytest $(PYTEST_ARGS)

bench: build
	$(ROSENV) python -P -m working_memory.bench $(ARGS)

clean:
	rm -rf $(BUILD)
