"""The domain vocabulary: pure, standard library only, cheap to import."""
