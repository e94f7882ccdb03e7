"""The test suite: one package per package of src/pcieperf (tests/pcie tests pcieperf.pcie, ...),
tests of the whole project at the top, builders and paths shared by tests in tests/helpers.

Every folder is a package so that test modules of the same name in different folders are
different modules (tests.nic.test_api, tests.pcie.test_api); tests/test_architecture.py keeps it
so, and keeps test modules from importing each other."""
