"""Errors raised by the trainers (the platform maps them to its own TrainingError)."""


class TrainerError(Exception):
    """Root of the trainers' errors."""


class NonFiniteError(TrainerError):
    """A loss, gradient or parameter became NaN or infinite: training cannot continue."""


class NonFiniteInputError(TrainerError):
    """The env handed over a NaN or infinite observation or reward: no setting of the trainer
    fixes that, the env must (which value, from which env step, is carried as data)."""

    def __init__(self, what: str, step: int, env_index: int, index: int | None, value: float):
        where = f" index {index}" if index is not None else ""
        super().__init__(
            f"env {env_index} returned a non-finite {what} ({what}{where} = {value}) at env "
            f"step {step}"
        )
        self.what, self.step, self.env_index, self.index, self.value = (
            what,
            step,
            env_index,
            index,
            value,
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.what, self.step, self.env_index, self.index, self.value))
