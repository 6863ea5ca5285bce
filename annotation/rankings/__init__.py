"""Rankings read: which count, the labels they make, pseudonymous exports."""
