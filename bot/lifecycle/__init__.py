"""A turn's life from claim to acknowledgement: its states and the one object that owns it."""
