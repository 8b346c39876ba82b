# Two commands for a newcomer: `make demo` (the main job) and `make test` (all tests).
# Both bootstrap everything on a fresh machine: venv, pinned ROS 2 wheels, colcon build.

SHELL := /bin/bash
PYTHON ?= python3
# The upstream ROS 2 tools no registry carries (launch, launch_ros, launch_testing,
# launch_pytest, the ros2 CLI, rosidl_runtime_py): installed from this folder when it
# exists (CI has it beside the clone); without it the launch and CLI tests skip.
ROS_WHEELS ?= $(wildcard $(abspath ../shared/wheels))
WHEEL_FILES := $(if $(ROS_WHEELS),$(sort $(wildcard $(ROS_WHEELS)/*.whl)))
# The venv lives outside the source tree: CMake refuses exported include paths
# (numpy's, from the venv) that sit inside the package's source directory. Its name
# hashes what is installed into it, so a venv with the tools is never one without.
VENV_KEY := $(shell { cat tools/requirements.txt tools/requirements-rostools.txt; \
	echo $(notdir $(WHEEL_FILES)); } | cksum | cut -d' ' -f1)
VENV ?= $(HOME)/.cache/working_memory/venv-$(VENV_KEY)
export WM_VENV := $(VENV)
BUILD ?= .build
export WM_BUILD := $(BUILD)
ROSENV := tools/rosenv
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
export ROS_DOMAIN_ID ?= 42

SOURCES := $(shell find working_memory msg srv launch config -type f ! -name '*.pyc' 2>/dev/null) \
	CMakeLists.txt package.xml

.PHONY: all setup build browser demo fleet test lint bench bench-ros clean

all: test

setup: $(VENV)/.ready

$(VENV)/.ready: tools/requirements.txt tools/requirements-rostools.txt tools/fix_cmake_paths.py
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r tools/requirements.txt
ifneq ($(WHEEL_FILES),)
	$(VENV)/bin/pip install --quiet -r tools/requirements-rostools.txt
	$(VENV)/bin/pip install --quiet --no-deps $(WHEEL_FILES)
endif
	$(VENV)/bin/python tools/fix_cmake_paths.py
	touch $@

build: $(BUILD)/.built

$(BUILD)/.built: $(VENV)/.ready $(SOURCES)
	$(ROSENV) colcon --log-base $(BUILD)/log build --paths . \
		--build-base $(BUILD)/build --install-base $(BUILD)/install \
		--symlink-install --event-handlers console_cohesion- summary- \
		--cmake-args -DBUILD_TESTING=OFF -DPython3_EXECUTABLE=$(abspath $(VENV))/bin/python
	echo $(abspath $(VENV)) > $(BUILD)/venv
	touch $@

demo: build
	$(ROSENV) python -P -m working_memory.demo $(ARGS)

# The real-browser tests' tools (test/browser): Debian's Chromium as root, the pinned npm
# packages of tools/browser into ~/.cache/working_memory; a no-op once there. What it cannot
# install, it names, and those tests skip with that reason.
# A small fleet to try `wm-inspect fleet` on: runs of three robots, two misconfigured.
fleet: build
	$(ROSENV) python -P -m working_memory.demo.fleet $(ARGS)

browser:
	@tools/browser/install >/dev/null

test: build browser
	$(ROSENV) pytest $(PYTEST_ARGS)

# The lint and package.xml checks alone (`make test` and `colcon test` run them too).
lint: build
	$(ROSENV) pytest -q test/test_flake8.py test/test_pep257.py test/test_package_xml.py

bench: build
	$(ROSENV) python -P -m working_memory.bench $(ARGS)

# The node and raw-rclpy baselines as separate processes on loopback (about 5 minutes).
bench-ros: build
	$(ROSENV) python -P -m working_memory.bench.ros_bench $(ARGS)

clean:
	rm -rf $(BUILD)
