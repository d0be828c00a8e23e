"""Tests of the demo agent: in-process through ``serve`` mostly, a few against the real subprocess."""
