"""What ``output_schema`` means: the answer taken out of its fence and parsed, and checked against
a registered JSON Schema in a child process."""
