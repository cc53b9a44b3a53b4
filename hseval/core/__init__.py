"""The foundation every layer uses: error types, registries, atomic file writes and one-line read
errors, devices, progress bars and the machine's description. Imports nothing else of hseval."""

__version__ = "0.2.0"
