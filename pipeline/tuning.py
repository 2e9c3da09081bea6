"""The long-form decoder's tuned numbers (pipeline/transcribe.py), in one table.

Each constant says its unit, what it trades (what goes wrong when it is larger, and when it is smaller), and the tests
that pin it: a test function of tests/test_longform.py unless another file is named, with the parametrize rows that
fail when the value moves by about a third either way (row comments are quoted; "under" names the comment a row sits
under; "loosely": a row that takes the constant's path with a wide margin). A constant the unit tables do not pin is
pinned only end to end, on real speech: the slow tests named.

Which recordings showed the need for each value, what was measured and what was tried: docs/longform.md, one section
per constant name. Detector-side numbers (SOUND_BRIDGE, RISE_BELOW_PEAK, MAX_FRAMES, ...) live in pipeline/vad.py.
"""

# --- window planning (_plan_window, _speech_window, _Window) ---------------------------------------------------------

# Seconds of audio kept before detected speech where a window, a re-decode or a sound's window starts (and before the
# first speech, for language detection). Larger: more of the pause before the speech, where whisper may start early
# or write into it. Smaller: the first word, whose onset the detector finds late, loses its start.
# Pinned by: test_plan_window rows "nothing before the speech: from 0.2 s before it", "a sound alone: whisper judges
# it, tightly", "a short one that runs into the speech starts it", "a sound that runs into the speech starts it",
# "speech soon: ...", the row after it, "a sound after it: judged alone", "(speech after music?)", "a long one: 30 s
# at a time", and the blip rows under "... and the window after it" and "... with the sounds after it" (_blip_end);
# test_plan_window_of_a_whisper_at_the_end (all rows); test_missed_speech rows "whisper stopped after 4 s ..." and
# "only its first half second was: from 0.2 s before the rest".
LEAD_IN = 0.2

# Seconds: a pause this long is a sentence's end. A window prefers to end in one; it bounds the runs of speech that
# _gains levels; a word in a shorter gap is not moved onto the next speech (_first_word); a word after such a pause
# that the detector heard none of starts where its sound rises (_snap_to_speech). Larger: continuous speech has few
# such pauses, so windows end in gaps between words, and runs of different loudness merge. Smaller: gaps between
# words count as sentence ends, one voice splits into runs that get levelled, words jump across word gaps.
# Pinned by: test_plan_window rows "latest >= 0.5 s pause", the first row under "a silence (>= 2 s, no sound)" and
# the row under "... a sound under 1 s, away from the speech after it"; test_gains (the three-run rows, pauses of 0.6
# and 0.5 s; "a gap of 0.3 s: between words"); test_first_word_of_a_region row "in a 0.2-s gap between words: not a
# pause to jump". Its use in _snap_to_speech (the rise after a pause) is pinned only end to end
# (test_cues_start_at_the_speech).
SENTENCE_PAUSE = 0.5

# Seconds of the pause (at most half of it) kept at the end of a window; also where a window of a blip of speech with
# no sound after it ends, and what a pause keeps of its length before it counts against UNHEARD for a sound's own
# window. Larger: more silence at a window's end, which whisper may fill. Smaller: the last word's tail, which the
# detector cuts early, is cut.
# Pinned by: test_plan_window rows "nothing before the speech", "... unless under 1 s", "a short one that runs into
# the speech", "a sound that runs into the speech", "speech soon: from 0.2 s before it to 1 s into the pause after",
# the row after it, the last two rows under "a silence (>= 2 s, no sound)", the row under "... unless a sound is in
# it", the first row under "... or too little room is left", and "speech ends in this window: 1 s into the pause
# after it".
PAUSE_TAIL = 1.0

# Seconds into a window past which its latest pause ends it, however short, rather than an earlier, longer one. Larger:
# more windows run to 30 s and whisper's timestamps cut them mid-speech (more decoded twice). Smaller: windows end
# early in a sentence pause, so more windows (encoder passes), each with less context.
# Pinned by: test_plan_window rows "latest >= 0.5 s pause", "none: the latest past 20 s", the row under "none past 20
# s: at 30 s", the first row under "a silence (>= 2 s, no sound)", the rows under "... a sound under 1 s, away from
# the speech after it" and "... a sound too close to the next speech".
FILL = 20.0

# Seconds: a silence this long with no sound in it is left out of a window (the window goes on after it); a stretch
# this long without detected speech is searched for sounds the detector missed; sounds closer together than this
# share a whisper's window (_sounds_end). Larger: long silences stay in windows (whisper writes into them, windows
# end sooner), fewer stretches are searched, so whispers and first words the detector missed are lost. Smaller:
# ordinary pauses are cut out or searched, so more windows of breaths and clicks, and a whisper's sentences split.
# Pinned by: test_plan_window rows under "a silence (>= 2 s, no sound)", "... unless a sound is in it", "... a sound
# under 1 s", "... nor one that leads to a blip", "... with the sounds after it, each within 2 s", "... a sound too
# close to the next speech" and "... or too little room is left", and "latest >= 0.5 s pause";
# test_plan_window_of_a_whisper_at_the_end (all rows).
UNHEARD = 2.0

# Seconds of a silence left out of a window that are kept after the speech before it, and before the speech after it
# (whisper still sees a pause; _off_the_seams moves words that land there). Larger: more silence per window, less
# speech. Smaller: whisper sees no pause at the seam and runs two sentences together; word ends and starts are cut.
# Pinned by: test_plan_window rows under "a silence (>= 2 s, no sound): left out but for 0.6 s after the speech and
# 0.4 s before the next" (incl. "(even right after the window's start)"), under "... a sound under 1 s" and "... nor
# one that leads to a blip", the second row under "... and the window after it" and under "... or too little room is
# left"; test_off_the_seams row "a word spanning it" (loosely).
GAP_KEPT = (0.6, 0.4)

# Seconds: a sound the detector missed, away from speech, shorter than this gets no window (a breath, a click).
# Larger: short whispers the detector missed are lost. Smaller: breaths and clicks each cost an encoder pass, and
# whisper may write a filler over them.
# Pinned by: test_plan_window rows "a sound alone: whisper judges it, tightly", "... unless under 1 s (a breath, a
# click): skipped", the rows under "... unless a sound is in it" and "... a sound under 1 s, away from the speech
# after it", and the second row under "... and the window after it: the blip and the sound it lies in".
SOUND_ALONE = 1.0

# Seconds kept after a sound in its own window (and after the sounds of a blip's window). Larger: more silence in the
# window. Smaller: the sound's last syllable is cut.
# Pinned by: test_plan_window rows "a sound alone: whisper judges it, tightly", "a sound after it: judged alone",
# "(speech after music?)", the blip rows under "... and the window after it" and "... with the sounds after it";
# test_plan_window_of_a_whisper_at_the_end (all rows).
SOUND_TAIL = 0.3

# --- re-decoding speech whisper skipped (_skipped_speech, _uncovered, _skipped, _missed_speech) -----------------------

# Decodes, at most, per window, of speech that a re-decode of skipped speech skipped again. Larger: more encoder
# passes on a stretch whisper keeps skipping. Smaller: the second of two skipped sentences is lost.
# Pinned only end to end: tests/test_utterances.py::test_nothing_lost_utterance_by_utterance (test_skipped pins what
# goes on the worklist, not how many decodes it gets).
REDECODES = 3

# Seconds: detected speech at least this far after a window's last text, and at least this long before whisper's next
# window, is decoded again (whisper ended the window early); also the least speech a run needs to be levelled
# (_gains) and that a re-decode's skipped tail needs (_skipped). Larger: short sentences whisper dropped stay lost.
# Smaller: word tails and breaths are decoded again (encoder passes, made-up lines).
# Pinned by: test_missed_speech row "only its first half second was: from 0.2 s before the rest"; test_skipped row
# "0.3 s of speech left before 20 s" (loosely); test_gains row "a blip" (loosely).
MISSED_SPEECH = 0.5

# Seconds of detected speech, at least, in a stretch no decoded text covers, for it to be decoded again. Larger:
# short sentences whisper skipped are lost. Smaller: breaths, "uh"s and words whose timing slipped are decoded alone,
# each a whole encoder pass, and give nothing or a filler.
# Pinned by: test_uncovered rows under "under a second of speech: not decoded again" (the first: 0.7 s of all speech;
# the third: 1.2 s, decoded).
SKIPPED_SPEECH = 1.0

# Seconds: no spoken word is longer. A timed word covers at most its last LONG_WORD seconds (_uncovered), and a word
# whisper placed in a silent pause moves onto speech at most this far after it (_first_word). Larger: a word the
# alignment stretched back over skipped speech hides it. Smaller: slow words leave their start "uncovered", and that
# is decoded again for nothing.
# Pinned by: test_uncovered row under "a word stretched over 1.5 s covers only its last 1.5 s"; its use in _first_word
# only by test_first_word_of_a_region row "all of it in the silent pause: onto the speech after it" (loosely).
LONG_WORD = 1.5

# Seconds of audio on each side of decoded text taken as covered by it. Larger: skipped speech right beside text is not
# found. Smaller: the slack of word timing leaves gaps that are decoded again for nothing.
# Pinned by: test_uncovered rows "a gap between words", the row under "a word stretched over 1.5 s", the last row
# under "under a second of speech"; test_skipped row "(the text ended inside a region: from just after it)".
COVER_SLACK = 0.3

# --- snapping word times onto the detected speech (_snap_to_speech, _first_word, _unstretch, _quieter) ---------------

# Seconds: at most this much a segment's start (without word times) moves onto the detected speech (a segment's times
# are coarse, and the detector misses some speech). Larger: a segment moves onto speech it does not belong to. Smaller:
# segment starts stay in the pause before the speech.
# Pinned by no test: test_snap_to_speech rows "a segment's start moves 1 s at most" and the row after it pin _snap's
# limit with 1.0 passed in; SNAP_MAX applies only when transcribe() times no words (the subtitle path always does),
# which tests/test_precision.py and tests/test_e2e.py::test_spanish_detected_and_translated run for text only.
SNAP_MAX = 1.0

# Seconds: the first word of a region of speech that starts up to this far into it starts at the region's start
# (whisper's alignment is late on the first word after a pause); _unstretch's reach too. Larger: a word after one that
# whisper left out is pulled onto the region's start. Smaller: late first words stay late (cues start late).
# Pinned by: test_first_word_of_a_region rows "first word of a region, aligned late", the row after it, "more than 0.5 s
# in: whisper may have left out a word there"; test_unstretch_a_first_word row "the next speech begins 0.7 s after it".
ONSET_EARLY_MAX = 0.5

# Seconds: a segment's first word this long, starting well inside a region, is taken as drawn back over the speech
# before it (_unstretch). Larger: such stretched words stay, and their cues start early. Smaller: slow first words are
# moved.
# Pinned by: test_unstretch_a_first_word rows "drawn back over the tail of the speech before: onto the next speech",
# "(the next word's own start still in the pause)", "not stretched" (0.35 s).
STRETCHED_WORD = 0.6

# dB: a word this far under the speech after it lies in silence (whisper's alignment put it in the pause), and moves
# onto that speech. Larger: words the alignment put in a quiet pause stay there (cues start early). Smaller: a quiet
# word on a sound the detector missed is moved off its sound.
# Pinned by: test_first_word_of_a_region rows "all of it in the silent pause: onto the speech after it" (70 dB) and
# "all of it on a sound the detector missed: left there" (0 dB): held between 0 and 70 dB; its value only end to end
# (test_cues_start_at_the_speech).
QUIET_BELOW = 20.0

# --- decode rules (_Guard, _decode_batch, _new_speech, _gains, _cut_loop, _is_quiet) ---------------------------------

# whisper's no-speech probability under which text where the detector heard no speech may be kept (with SURE_LOGPROB),
# and a window the detector heard nothing in is decoded at all (_decode_batch). Larger: white noise (0.99) and music
# get decoded and may keep text. Smaller: whispers, which whisper itself calls likely silent, are dropped.
# Pinned by: test_hallucination_guards row "no speech found, whisper sure" (held above 0.3 only); its value only end
# to end: tests/test_e2e.py::test_no_cues_in_long_silence_or_noise, test_no_cues_in_music,
# test_music_after_a_whisper_gets_no_cue.
SURE_NO_SPEECH = 0.95

# Average log-probability per token above which whisper is sure of its text: needed where the detector heard no speech
# (_sure) and for a re-decode of skipped speech (_new_speech). Larger (nearer 0): whispers and unusual voices are
# dropped. Smaller: text made up over music, a breath or a slipped word is kept.
# Pinned by: test_new_speech rows "whisper unsure of it: made up over ..." (-0.92), the "so" row (-0.78), the row at
# -0.6 (dropped), "(the least sure of the real finds)" (-0.46), "speech whisper skipped" and "not just the filler"
# (-0.3, loosely); test_hallucination_guards row "no speech found, whisper sure" (-0.4).
SURE_LOGPROB = -0.6

# dB: a run of speech this far or more under the loudest run of its window is raised to it (_gains). Larger: a quiet
# sentence beside a loud one stays quiet, and whisper skips it. Smaller: one voice's ups and downs are levelled, and
# its noise raised.
# Pinned by: test_gains rows "quiet after loud" (20 dB), the row after it, "10 dB: one voice, as it comes and goes":
# held between 10 and 20 dB.
LOUDNESS_STEP = 12.0

# dB: at most this much a run is raised. Larger: near-silence and noise are raised to speech level. Smaller: very
# quiet speech stays too quiet to be read.
# Pinned by: test_gains row "30 dB at most".
MAX_GAIN = 30.0

# A run of tokens said this many times in a row, in a decode still repetitive after every fallback temperature, is a
# loop and is cut at its first occurrence. Larger: loops stay in the text longer. Smaller: words a speaker really says
# twice are cut.
# Pinned by: test_cut_loop rows "a phrase looping", "no timestamps", "twice is speech".
LOOP_REPEATS = 3

# dBFS RMS below which a window of detected speech holds no audible speech and is not decoded (speech is typically
# -35..-15 dBFS; whisper makes up "Thank you." in near-silence). Larger: quiet speech is skipped. Smaller: near-silence
# is decoded and written over.
# Pinned by no test's value: no unit table reaches _is_quiet, and no real-audio test has a window of detected speech
# this quiet. End to end, test_a_whisper_under_the_quiet_floor_is_read checks the rule's scope (a sound's window is
# decoded below it).
QUIET_DBFS = -60.0

# --- batching (_parts) ------------------------------------------------------------------------------------------------

# Seconds: no part of a recording decoded side by side with others (batch_size > 1) is shorter; each cut is searched
# for within MIN_PART / 4 of the even split. Larger: fewer parts, so less batching on shorter recordings. Smaller:
# more parts, each starting without the previous text as prompt (less accurate).
# Pinned by: tests/test_utterances.py::test_parts rows "too short to cut", "the longer pause", the row before it,
# and the 8-part row; end to end by tests/test_utterances.py::test_batched_decoding_keeps_every_utterance.
MIN_PART = 60.0
