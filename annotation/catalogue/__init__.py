"""The catalogue: occupations, prompts and items, loaded, imported, drawn."""
