"""Errors raised by the trainers (the platform maps them to its own TrainingError)."""


class TrainerError(Exception):
    """Root of the trainers' errors."""


class NonFiniteError(TrainerError):
    """A loss, gradient or parameter became NaN or infinite: training cannot continue."""
