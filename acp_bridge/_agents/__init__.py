"""The agents' own concerns: installing a profile's pinned package, and whether a profile is ready
to run here (doctor and its probe)."""
