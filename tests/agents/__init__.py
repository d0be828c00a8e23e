"""Small fake ACP agents the tests run as real subprocesses."""
