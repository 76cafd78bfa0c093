"""The static web edition's build helpers (the site builder's, not the learner's)."""
