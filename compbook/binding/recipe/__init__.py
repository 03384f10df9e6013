"""The paper's released controlled-model recipe, scaled down (chapter 13): settings, data, model, training, readings, checks."""
