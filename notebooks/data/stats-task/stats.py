"""Small statistics helpers. Each one is still a stub: ask the agent to fix it."""


def mean(values):
    raise NotImplementedError("mean")


def median(values):
    raise NotImplementedError("median")


def mode(values):
    raise NotImplementedError("mode")


def variance(values):
    raise NotImplementedError("variance")
