"""A seat played by a person: in the terminal (:mod:`.terminal`) or in the browser
(:mod:`.web`, which reuses the published site's replay viewer)."""
