"""Golden wire fixtures: recorded JSON lines of the demo and TypeScript example agents."""
