"""The lowest private layer: the operating system, held at arm's length.

Process groups and their safe signalling, bounded buffers, confined path resolution under
roots, constructed environments, redaction, and the small concurrency helpers every layer
above shares. Nothing here knows about ACP, profiles or envelopes.
"""
