# amqpfuzz: `make check` sets up a machine that has never seen the project and runs every test;
# a second run only re-checks what is already there.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Debian packages the project needs: the brokers under test, a Java runtime (PySpark), Chromium
# (the report's screenshot), openssl (the TLS broker's certificates), tshark (Wireshark's decoder
# of captured AMQP frames, with text2pcap) and a C compiler with Python's headers (pip builds
# python-qpid-proton from its source), and the Qpid Proton example broker (an AMQP 1.0 peer);
# the client libraries the client campaigns fuzz from Debian and what builds or runs their shims:
# rabbitmq-c, PHP with php-amqplib, Ruby with Bunny, and the AMQP 1.0 uamqp (its C core under the
# system's Python); Go, Rust, Node and the JDK are the machine's toolchains, and the other
# libraries come from their own registries (`amqpfuzz client build`: fuzzer/clients/builds.py).
# Maven fetches the JVM brokers (Qpid Broker-J, ActiveMQ Artemis) and JaCoCo from Maven Central.
DEBS := rabbitmq-server garagemq openjdk-17-jre-headless openjdk-17-jdk-headless maven chromium openssl tshark gcc python3-dev \
  libqpid-proton11-dev-examples librabbitmq-dev \
  php-cli php-amqplib ruby ruby-bunny python3-uamqp
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
STAMP := $(VENV)/.installed
CLIENTS := $(VENV)/.clients
JVM := $(VENV)/.jvm
PACKAGES := spec strategies scenarios fuzzer reports

.PHONY: check setup system-packages lint test examples fuzz

check: setup lint test examples

setup: system-packages $(STAMP) $(CLIENTS) $(JVM)

system-packages:
	@missing=""; \
	for p in $(DEBS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  apt="$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get -y -q"; \
	  $$apt install --no-install-recommends $$missing \
	  || { $$apt update && $$apt install --no-install-recommends $$missing; }; \
	fi

$(STAMP): pyproject.toml
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,connect]'
	@touch $@

# The client shims that need building (C, Go, Node, Java, Rust), into the venv's
# share/amqpfuzz/clients, each library at its pinned version from its registry (the Go module
# proxy, npm, Maven Central, crates.io; Go's, Maven's and Cargo's caches are the machine's);
# `amqpfuzz client build` itself rebuilds only a shim whose sources changed.
$(CLIENTS): $(STAMP) fuzzer/clients/clients.toml $(wildcard fuzzer/clients/shims/* fuzzer/clients/shims/*/* fuzzer/clients/shims/*/*/*)
	$(BIN)/amqpfuzz client build
	@touch $@

# The JVM brokers and JaCoCo at the versions fuzzer/brokers/maven/pom.xml pins, into a cache shared
# by every checkout of the machine (~/.cache/amqpfuzz/jvm): fetched once, then only checked.
$(JVM): $(STAMP) fuzzer/brokers/maven/pom.xml
	$(BIN)/amqpfuzz broker install
	@touch $@

# mypy cannot follow the editable install's import hook, so it reads the packages through a
# tree of symlinks laid out as they are installed (amqpfuzz/spec -> ../../spec).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@rm -rf .mypy-tree && mkdir -p .mypy-tree/amqpfuzz && \
	  for p in $(PACKAGES); do ln -s ../../$$p .mypy-tree/amqpfuzz/$$p; done
	cd .mypy-tree && ../$(BIN)/mypy $(addprefix -p amqpfuzz.,$(PACKAGES))

# Three workers on two cores: most of the slow tests wait on brokers, Spark and timeouts, not on
# a core (2 workers: 20 min; 3: 17.5 min, every test green). The slow tests are collected first
# (tests/conftest.py), and each worker is handed two at a time: pytest-xdist's default hands
# each a quarter of its share at once, which left one worker with every slow test of its chunk
# while the others had long run out of work.
TEST_WORKERS ?= 3
test: setup
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --maxschedchunk 2

# The example broker project (its own pytest.ini): the plugin as a user's CI runs it.
examples: setup
	$(BIN)/python -m pytest examples -p no:cacheprovider -q

# The main job: a minute of fuzzing on a throwaway RabbitMQ, its summary, then the report of the
# run. Failures found (status 1) are the point of the job, not a reason to skip the report.
FUZZ_OUT ?= amqpfuzz-out
fuzz: setup
	@status=0; $(BIN)/amqpfuzz run --duration 60 --out $(FUZZ_OUT) || status=$$?; \
	if [ $$status -gt 1 ]; then exit $$status; fi; \
	$(BIN)/amqpfuzz report --in $(FUZZ_OUT) --out $(FUZZ_OUT)/report
