"""pipeline.asr.languages against whisper's own tables: the same codes, names, order and aliases."""

from whisper.tokenizer import LANGUAGES, TO_LANGUAGE_CODE

from pipeline.asr import languages


def test_the_languages_are_whispers():
    assert list(languages.LANGUAGES.items()) == list(LANGUAGES.items())
    assert languages.TO_LANGUAGE_CODE == TO_LANGUAGE_CODE
