"""The one exception type for failures a user can cause and fix (bad input, missing model, no audio)."""


class SubtitleError(Exception):
    """A problem the user can fix; the message is one line that says what to do.

    The CLI prints it and exits with code 2; the web app shows it with gr.Error.
    """
