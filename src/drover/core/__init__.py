"""The domain vocabulary: pure, cheap to import; standard library only, but for the job spec
(job_spec.py, a msgspec Struct every process may import)."""
