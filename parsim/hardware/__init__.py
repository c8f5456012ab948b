"""Hardware: frozen specs with units in their names, presets with sources, TOML files, rates per mode."""
