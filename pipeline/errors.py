"""The one exception type for failures a user can cause and fix (bad input, missing model, no audio)."""


class SubtitleError(Exception):
    """A problem the user can fix; the message is one line that says what to do.

    The CLI prints it and exits with code 2; the web app shows it in the page's status line.
    """


class OptionError(SubtitleError):
    """An option's value is not valid. `option` is the options dataclass field it belongs to, so the CLI can name its
    flag and the web app its widget; the message names neither."""

    def __init__(self, option: str, message: str):
        super().__init__(message)
        self.option = option


class Cancelled(Exception):
    """The job was stopped (its consumer stopped reading, or Cancel): the work stops where it is."""
