"""The released controlled-model recipe, scaled (chapter 13): settings, data, model, training, readings, checks."""
