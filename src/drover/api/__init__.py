"""HTTP only: translate requests into controller commands and read models into JSON."""
