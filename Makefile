# Build / test scaffolding for youbot_dynamics.
#
# Without a sourced ROS 2 (ROS_DISTRO unset) the ROS 2 Kilted PyPI wheels are
# installed into .venv. With a sourced ROS 2 the venv is created with
# --system-site-packages so the system rclpy/message packages are used.
# The services/actions package youbot_dynamics_interfaces is built by colcon on a ROS 2 machine and,
# without one, by tools/build_interfaces.py in a separate build environment (BUILD_VENV) and
# installed into .venv (no sourcing needed). So is, where .venv imports no control_msgs (it is on no PyPI
# registry), the test-only control_msgs of test/interfaces/control_msgs (FollowJointTrajectory and its two
# messages, for the tests of the action: doc/control.md); a real control_msgs wins.

PYTHON      ?= python3
VENV        ?= .venv
VENV_PY     := $(VENV)/bin/python
PIP         := $(VENV_PY) -m pip
# the main job end to end (test_demo_job.py, marker main_job) runs by `make demo-test`, not here: on a
# 2-core machine its external-torque phase did not give the same figures twice (stop 37: doc/main_job.md)
PYTEST_ARGS ?= -m "not main_job"

ROS_DOMAIN_ID                 ?= 42
ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export ROS_DOMAIN_ID ROS_AUTOMATIC_DISCOVERY_RANGE

ifdef ROS_DISTRO
VENV_MODE  := system-ros-$(ROS_DISTRO)
VENV_FLAGS := --system-site-packages
ROS_REQS   :=
else
VENV_MODE  := ros-wheels
VENV_FLAGS :=
ROS_REQS   := -r requirements-ros.txt
endif

BUILD_VENV   ?= .venv-build
IFACE_STAMP  := $(VENV)/.interfaces-stamp
IFACE_DEPS   := tools/build_interfaces.py requirements-build.txt $(shell find youbot_dynamics_interfaces -type f) \
                $(shell find test/interfaces -type f)

STAMP      := $(VENV)/.setup-stamp
MODE_FILE  := $(VENV)/.venv-mode
# setup.py reads the controller registry for the console scripts: a new or changed entry reinstalls them
SETUP_DEPS := setup.py setup.cfg package.xml requirements-test.txt requirements-ros.txt Makefile \
              youbot_dynamics/contract/controller_registry.py

# Force a rebuild (from scratch) if the venv was made for the other mode
# (system ROS vs. wheels) or for a different ROS distro.
ifneq ($(shell cat $(MODE_FILE) 2>/dev/null),$(VENV_MODE))
STAMP_FORCE := FORCE
endif

.PHONY: setup test demo demo-test bench clean distclean FORCE

ifdef ROS_DISTRO
setup: $(STAMP)
else
setup: $(STAMP) $(IFACE_STAMP)
endif

$(STAMP): $(SETUP_DEPS) $(STAMP_FORCE)
	@if [ -d $(VENV) ] && [ "$$(cat $(MODE_FILE) 2>/dev/null)" != "$(VENV_MODE)" ]; then \
	  echo "Removing $(VENV): built for '$$(cat $(MODE_FILE) 2>/dev/null)', need '$(VENV_MODE)'"; \
	  rm -rf $(VENV); fi
	@test -x $(VENV_PY) || { \
	  echo "Creating $(VENV) ($(VENV_MODE)) with $(PYTHON)"; \
	  $(PYTHON) -m venv $(VENV_FLAGS) $(VENV) && echo "$(VENV_MODE)" > $(MODE_FILE); }
	$(PIP) install $(ROS_REQS) -r requirements-test.txt -e .
	@touch $@

$(IFACE_STAMP): $(STAMP) $(IFACE_DEPS)
	$(VENV_PY) tools/build_interfaces.py --venv $(VENV) --build-env $(BUILD_VENV)
	$(VENV_PY) tools/build_interfaces.py --venv $(VENV) --build-env $(BUILD_VENV) \
	  --package test/interfaces/control_msgs --unless-installed
	@touch $@

test: setup
	$(VENV_PY) -m pytest $(PYTEST_ARGS)

demo: setup
	$(VENV_PY) -m youbot_dynamics demo

demo-test: setup
	$(VENV_PY) -m pytest -m main_job test/test_demo_job.py

bench: setup
	$(VENV_PY) bench/run.py

clean:
	rm -rf build/ install/ log/ .pytest_cache/
	find . -path ./$(VENV) -prune -o -path ./$(BUILD_VENV) -prune -o -path ./.git -prune -o \
	  \( -name '*.egg-info' -o -name '__pycache__' \) -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) $(BUILD_VENV)

FORCE:
