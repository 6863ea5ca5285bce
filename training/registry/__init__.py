"""Versions: registered, evaluated, promoted, rolled back, carded; the sampler they feed."""
