"""The tuned numbers of the whole package, in one table: long-form decoding (pipeline/asr/), the speech detector, the
cues (pipeline/subtitles/cues.py) and speaker turns (pipeline/speakers/turns.py).

Each value has its unit and what it trades (larger: ...; smaller: ...) beside it, and the tests that pin it in
`PINNED_BY` (tests/test_tuning.py checks they exist). Which test rows pin each value and by how much: docs/tuning.md;
why each value is what it is: docs/longform.md and docs/speakers.md, one section per name.
"""

# --- window planning (pipeline/asr/longform/windows.py) ---

# s kept before speech where a window starts. Larger: whisper writes into the pause; smaller: the first word is cut.
LEAD_IN = 0.2
# s: a pause this long ends a sentence. Larger: windows end between words, runs merge; smaller: words jump gaps.
SENTENCE_PAUSE = 0.5
# s of a pause (at most half) kept at a window's end. Larger: silence whisper may fill; smaller: the last word is cut.
PAUSE_TAIL = 1.0
# s into a window past which its latest pause ends it. Larger: more cut at 30 s; smaller: windows of less context.
FILL = 20.0
# s: a silence this long is left out of a window and searched for sounds. Larger: whispers lost; smaller: clicks.
UNHEARD = 2.0
# s of a left-out silence kept after and before speech. Larger: less speech per window; smaller: sentences run on.
GAP_KEPT = (0.6, 0.4)
# s: a shorter missed sound away from speech gets no window. Larger: whispers lost; smaller: windows of breaths.
SOUND_ALONE = 1.0
# s kept after a sound in its own window. Larger: more silence in the window; smaller: the last syllable is cut.
SOUND_TAIL = 0.3

# --- re-decoding speech whisper skipped (pipeline/asr/longform/redecode.py) ---

# Decodes at most per window of speech skipped again. Larger: more encoder passes; smaller: skipped sentences lost.
REDECODES = 3
# s of speech after a window's last text that is decoded again. Larger: short sentences lost; smaller: tails decoded.
MISSED_SPEECH = 0.5
# s of speech, at least, no text covers, decoded again. Larger: short sentences lost; smaller: breaths decoded alone.
SKIPPED_SPEECH = 1.0
# s: no spoken word is longer. Larger: a stretched word hides skipped speech; smaller: slow words are decoded again.
LONG_WORD = 1.5
# s each side of decoded text taken as covered. Larger: skipped speech beside it missed; smaller: needless re-decodes.
COVER_SLACK = 0.3

# --- snapping word times onto the detected speech (pipeline/asr/longform/snap.py) ---

# s a segment's start (no word times) moves onto speech, at most. Larger: onto the wrong speech; smaller: stays early.
SNAP_MAX = 1.0
# s into a region within which its first word starts at the region's start. Larger: pulls wrong words; smaller: late.
ONSET_EARLY_MAX = 0.5
# s: a first word this long inside a region was drawn back. Larger: cues start early; smaller: slow words are moved.
STRETCHED_WORD = 0.6
# dB under the next speech at which a word lies in silence and moves on. Larger: stays in pauses; smaller: moves off.
QUIET_BELOW = 20.0

# --- decode rules (pipeline/asr/decoding.py, gains in windows.py) ---

# No-speech probability under which a window without detected speech keeps text. Larger: music does; smaller: no.
SURE_NO_SPEECH = 0.95
# Mean log-probability per token above which whisper is sure of its text. Larger: whispers dropped; smaller: made up.
SURE_LOGPROB = -0.6
# dB under its window's loudest run at which a run is raised to it. Larger: quiet sentences skipped; smaller: levelled.
LOUDNESS_STEP = 12.0
# dB a run is raised, at most. Larger: noise is raised to speech level; smaller: very quiet speech stays unread.
MAX_GAIN = 30.0
# Repeats in a row that make a loop, cut at its first occurrence. Larger: loops stay; smaller: real repeats are cut.
LOOP_REPEATS = 3
# dBFS RMS under which a window of speech is not decoded. Larger: quiet speech skipped; smaller: made-up text.
QUIET_DBFS = -60.0

# --- batching (pipeline/asr/longform/windows.py parts) ---

# s: the shortest part decoded side by side with others. Larger: less batching; smaller: more parts without a prompt.
MIN_PART = 60.0

# --- the speech detector (pipeline/asr/vad.py) ---

# Detector frames (32 ms) per call and per fresh second pass. Larger: it drifts too; smaller: more of it starts cold.
MAX_FRAMES = 512
# dB over a stretch's floor at which a 10-ms frame is a sound. Larger: quiet whispers are not found; smaller: noise is.
SOUND_ABOVE_FLOOR = 15.0
# Percentile of a stretch's frame levels taken as its floor. Larger: nothing stands out; smaller: noise stands out.
SOUND_FLOOR_PERCENTILE = 10
# dBFS under which no frame is a sound. Larger: quiet whispers in clean recordings are lost; smaller: dither is sound.
SOUND_MIN_DBFS = -75.0
# s: sounds (and speech) closer than this are one stretch. Larger: separate sounds join; smaller: a whisper splits.
SOUND_BRIDGE = 1.0
# s of sound, at least, in a stretch for it to be a sound. Larger: short whispered words lost; smaller: clicks count.
SOUND_MIN = 0.2
# Percentile of a span's frame levels taken as its loudness. Larger: peaks set it; smaller: pauses make it quiet.
LOUDEST_PERCENTILE = 90
# dB under its loudness at which a sound starts. Larger: found in the breath before; smaller: a soft start is cut.
RISE_BELOW_PEAK = 15.0

# --- cues (pipeline/subtitles/cues.py) ---

# s of silence between words that always ends a cue. Larger: utterances run together; smaller: breaths split.
PAUSE = 0.7
# s a word may start before one given ahead of it. Larger: out-of-order sentences stay; smaller: needless reorders.
OUT_OF_ORDER = 2.0
# Words back that a repeated word is looked for in. Larger: more comparisons; smaller: longer copies stay.
REPEAT_REACH = 8
# s of the same sound over which the same word is a copy. Larger: copies stay; smaller: real repeats lose one.
REPEAT_OVERLAP = 0.02
# Share of a cue's words before which it is not cut. Larger: early clause ends passed over; smaller: tiny cues.
EARLIEST_CUT = 1 / 3
# Characters of line-length difference a break after punctuation is worth. Larger: lopsided; smaller: mid-clause.
PUNCTUATION_BREAK = 6
# s a cue too fast to read may start before its speech. Larger: visibly early; smaller: takes the next cue's time.
EARLY = 0.15
# s a cue may start after its speech to give the one before time. Larger: visibly late; smaller: too fast to read.
LATE = 0.3

# --- speaker turns (pipeline/speakers/turns.py; chosen on benchmarks/speakers.py's development set) ---

# s of speech in each window embedded. Longer: more windows hold two voices; shorter: noisier embeddings.
TURN_WINDOW = 1.6
# s between window starts. Larger: fewer windows to tell a quiet voice by; smaller: more encoder calls.
TURN_STEP = 1.0
# Cosine distance at which clustering stops merging (narrow; CAM++'s). Larger: alike voices join; smaller: one splits.
TURN_DISTANCE = 0.70
# s of a window in each part that votes for a voice, and s between parts. Shorter: noisy; longer: short turns lost.
TURN_PART = 0.4
TURN_PART_HOP = 0.2
# s: the steps a turn change is placed in. Smaller: finer, more steps to vote on; larger: coarser turns.
TURN_RESOLUTION = 0.1
# s: a shorter run of one voice joins a neighbour. Larger: a "yes" is lost; smaller: a noisy vote makes a turn.
TURN_MIN_RUN = 0.3
# Share of the windows under which a cluster joins the nearest. Larger: quiet speakers merged; smaller: coughs count.
TURN_MIN_SHARE = 0.05
# How many voices (voice_count: 3D-Speaker's spectral recipe and merge). Share of each window's affinities kept,
# and at least this many (3D-Speaker's 0.012 suits hour-long meetings; on minutes it splits a voice heard in two
# places). Larger: a voice that says little joins another; smaller: one voice splits.
TURN_PRUNE = 0.2
TURN_MIN_NEIGHBOURS = 6
# ... and at most this many: 3D-Speaker's 1.2 % of the TURN_MAX_COUNTED windows. A share of a long recording's windows
# outnumbers a voice's own, which then cannot stand apart (six readers of 384 s counted as two). Larger: the voices of
# a long recording merge; smaller: one voice heard in two places splits.
TURN_MAX_NEIGHBOURS = 12
# Windows a cluster needs to count as a voice. Larger: a quiet speaker is missed; smaller: a cough counts.
TURN_MIN_CLUSTER = 4
# Cosine of two voices' centroids from which they are one (3D-Speaker's mer_cos), in the count and in a chunk's raise of
# it. Larger: one voice may count twice; smaller: alike voices merge.
TURN_MERGE = 0.8
# Voices counted at most, and windows under which there is one. Larger: slower count; smaller: voices lost.
TURN_MAX_SPEAKERS = 15
TURN_MIN_WINDOWS = 10
# Windows from which the count is the eigengap's; fewer are counted by average linkage to this cosine distance
# (3D-Speaker's cluster_line and short-audio AHC). Larger: voices of one room merge in longer recordings, or, the
# distance, in short ones; smaller: one voice through a phone codec splits.
TURN_SPECTRAL_FROM = 40
TURN_SHORT_DISTANCE = 0.6
# Windows counted at most (spread evenly). Larger: the count's time grows with its cube; smaller: rare voices missed.
TURN_MAX_COUNTED = 1000
# s between two words of a sentence at which its speaker may change. Larger: one speaker for two who follow each other
# closely; smaller: a sentence split by a flickering label.
TURN_SENTENCE_GAP = 0.2
# Windows clustered at most (the rest join the nearest). Larger: memory grows with its square; smaller: voices missed.
TURN_MAX_CLUSTERED = 3000
# Where the speaker changes (pipeline/speakers/segmentation.py): s between the starts of segmentation-3.0's 10-s chunks.
# Larger: fewer chunks agree on a change; smaller: more calls (0.27 s a minute of audio at 5 s).
SEGMENT_STEP = 5.0
# Share of the chunks hearing an instant that must see a change there, and s either side a change counts. Larger: a
# change is missed; smaller: a flicker of one chunk cuts a turn.
CHANGE_AGREE = 0.5
CHANGE_WITHIN = 0.05
# How many voices one chunk of segmentation-3.0 hears (chunk_voices): s a chunk's speaker must talk alone to count,
# and the cosine of two of its speakers' embeddings above which they are one voice (the model splits one voice at a
# change of microphone). Larger: a voice that says little is not counted; smaller: one voice counts twice.
CHUNK_ALONE = 0.5
CHUNK_MERGE = 0.5
# Cosine under which a few windows or a chunk's talker, to every voice found, are a voice of their own: a spectral
# cluster under TURN_MIN_CLUSTER windows (but TURN_MIN_SHARE of them) in voice_count, a talker a chunk hears alone
# where windows are under TURN_STRAY to every voice (newcomers). Larger: one voice's short stretch counts twice;
# smaller: a voice that says a sentence or two stays lost.
VOICE_APART = 0.25
TURN_STRAY = 0.4

# --- speaker labels in the cues (pipeline/subtitles/formats.py) ---

# s between two speakers' cue starts that share one dialogue cue. Larger: answers show early; smaller: cues flash by.
DIALOGUE_LEAD = 2.5

# --- `auto`'s encoder setting, measured once per machine (pipeline/asr/measured.py) ---

# Timed encoder passes per setting (after one not counted). More: a surer choice, a longer first load; fewer: noise.
AUTO_PASSES = 3
# Largest error of a setting's encoder output against the same weights computed in f32 (norm of the difference over
# the latter's norm). Larger: words lost on held-out utterances; smaller: no setting but f32 passes (docs/engine.md,
# *Precision*).
AUTO_MAX_ERROR = 0.03

_W, _R, _S, _D = (
    "tests/asr/test_windows.py",
    "tests/asr/test_redecode.py",
    "tests/asr/test_snap.py",
    "tests/asr/test_decoding.py",
)
_V, _C, _T, _L = (
    "tests/asr/test_vad.py",
    "tests/subtitles/test_cues.py",
    "tests/speakers/test_turns.py",
    "tests/asr/test_longform.py",
)
_K = "tests/speakers/test_clustering.py"

# The tests that fail when a value moves by about a third (or, where none does, that bound it).
PINNED_BY: dict[str, tuple[str, ...]] = {
    "LEAD_IN": (
        f"{_W}::test_plan_window",
        f"{_W}::test_plan_window_of_a_whisper_at_the_end",
        f"{_R}::test_missed_speech",
    ),
    "SENTENCE_PAUSE": (
        f"{_W}::test_plan_window",
        f"{_W}::test_gains",
        f"{_S}::test_first_word_of_a_region",
        f"{_L}::test_cues_start_at_the_speech",
    ),
    "PAUSE_TAIL": (f"{_W}::test_plan_window",),
    "FILL": (f"{_W}::test_plan_window",),
    "UNHEARD": (f"{_W}::test_plan_window", f"{_W}::test_plan_window_of_a_whisper_at_the_end"),
    "GAP_KEPT": (f"{_W}::test_plan_window", f"{_W}::test_off_the_seams"),
    "SOUND_ALONE": (f"{_W}::test_plan_window",),
    "SOUND_TAIL": (f"{_W}::test_plan_window", f"{_W}::test_plan_window_of_a_whisper_at_the_end"),
    "REDECODES": ("tests/test_utterances.py::test_nothing_lost_utterance_by_utterance",),
    "MISSED_SPEECH": (f"{_R}::test_missed_speech", f"{_R}::test_skipped", f"{_W}::test_gains"),
    "SKIPPED_SPEECH": (f"{_R}::test_uncovered",),
    "LONG_WORD": (f"{_R}::test_uncovered", f"{_S}::test_first_word_of_a_region"),
    "COVER_SLACK": (f"{_R}::test_uncovered", f"{_R}::test_skipped"),
    "SNAP_MAX": (f"{_S}::test_snap_to_speech_without_words",),
    "ONSET_EARLY_MAX": (f"{_S}::test_first_word_of_a_region", f"{_S}::test_unstretch_a_first_word"),
    "STRETCHED_WORD": (f"{_S}::test_unstretch_a_first_word",),
    "QUIET_BELOW": (f"{_S}::test_first_word_of_a_region", f"{_L}::test_cues_start_at_the_speech"),
    "SURE_NO_SPEECH": (
        f"{_D}::test_hallucination_guards",
        "tests/test_e2e.py::test_no_cues_in_long_silence_or_noise",
        f"{_L}::test_no_cues_in_music",
        f"{_L}::test_music_after_a_whisper_gets_no_cue",
    ),
    "SURE_LOGPROB": (
        f"{_R}::test_take_new",
        f"{_D}::test_hallucination_guards",
        f"{_D}::test_text_where_no_speech_was_heard",
    ),
    "LOUDNESS_STEP": (f"{_W}::test_gains",),
    "MAX_GAIN": (f"{_W}::test_gains",),
    "LOOP_REPEATS": (f"{_D}::test_cut_loop",),
    "QUIET_DBFS": (f"{_D}::test_is_quiet", f"{_L}::test_a_whisper_under_the_quiet_floor_is_read"),
    "MIN_PART": (f"{_W}::test_parts", "tests/test_utterances.py::test_batched_decoding_keeps_every_utterance"),
    "MAX_FRAMES": (f"{_L}::test_two_whispers_close_together_share_a_window",),
    "SOUND_ABOVE_FLOOR": (f"{_V}::test_sound_levels",),
    "SOUND_FLOOR_PERCENTILE": (f"{_W}::test_plan_window",),
    "SOUND_MIN_DBFS": (f"{_V}::test_sound_levels",),
    "SOUND_BRIDGE": (f"{_W}::test_plan_window", f"{_V}::test_sounds"),
    "SOUND_MIN": (f"{_L}::test_two_whispers_close_together_share_a_window", f"{_V}::test_sounds"),
    "LOUDEST_PERCENTILE": (f"{_V}::test_rise",),
    "RISE_BELOW_PEAK": (f"{_V}::test_rise",),
    "PAUSE": (f"{_C}::test_segmentation", f"{_C}::test_cues_end_when_speech_ends_and_keep_their_gap"),
    "OUT_OF_ORDER": (f"{_C}::test_in_time_order",),
    "REPEAT_REACH": (f"{_C}::test_repeats_said_once",),
    "REPEAT_OVERLAP": (f"{_C}::test_repeats_said_once",),
    "EARLIEST_CUT": (f"{_C}::test_long_speech_is_split_into_readable_cues_at_clauses",),
    "PUNCTUATION_BREAK": (f"{_C}::test_segmentation",),
    "EARLY": (f"{_C}::test_retime",),
    "LATE": (f"{_C}::test_retime",),
    "TURN_WINDOW": (f"{_T}::test_embedding_windows",),
    "TURN_STEP": (f"{_T}::test_embedding_windows",),
    "TURN_DISTANCE": (f"{_K}::test_cluster_voices",),
    "TURN_PART": (f"{_T}::test_part_offsets", f"{_T}::test_turns_of"),
    "TURN_PART_HOP": (f"{_T}::test_part_offsets",),
    "TURN_RESOLUTION": (f"{_T}::test_stepped",),
    "TURN_MIN_RUN": (f"{_T}::test_merge_short_runs",),
    "TURN_MIN_SHARE": (f"{_K}::test_cluster_voices",),
    "TURN_SENTENCE_GAP": ("tests/speakers/test_speaker_cues.py::test_whole_sentences",),
    "TURN_MAX_CLUSTERED": (f"{_K}::test_cluster_of_a_long_recording_is_bounded",),
    "TURN_PRUNE": (f"{_K}::test_voice_count",),
    "TURN_MIN_NEIGHBOURS": (f"{_K}::test_voice_count",),
    "TURN_MAX_NEIGHBOURS": (
        f"{_K}::test_neighbours_kept",
        "tests/speakers/test_turns.py::test_seven_voices_of_six_minutes_are_seven_speakers",
    ),
    "TURN_MIN_CLUSTER": (f"{_K}::test_voice_count",),
    "TURN_MERGE": (
        f"{_K}::test_voice_count",
        f"{_K}::test_distinct_voices",
        f"{_T}::test_a_chunk_that_hears_one_reader_as_two_leaves_one_voice",
    ),
    "TURN_MAX_SPEAKERS": (f"{_K}::test_voice_count",),
    "TURN_MIN_WINDOWS": (f"{_K}::test_voice_count",),
    "TURN_SPECTRAL_FROM": (f"{_K}::test_voice_count", f"{_T}::test_one_reader_through_a_phone_codec_stays_one_voice"),
    "TURN_SHORT_DISTANCE": (f"{_K}::test_voice_count", f"{_T}::test_one_reader_through_a_phone_codec_stays_one_voice"),
    "TURN_MAX_COUNTED": (f"{_K}::test_cluster_of_a_long_recording_is_bounded",),
    "SEGMENT_STEP": ("tests/speakers/test_changes.py::test_chunks_cover_the_recording",),
    "CHANGE_AGREE": ("tests/speakers/test_changes.py::test_change_points",),
    "CHANGE_WITHIN": ("tests/speakers/test_changes.py::test_change_points",),
    "CHUNK_ALONE": ("tests/speakers/test_changes.py::test_heard_alone",),
    "CHUNK_MERGE": ("tests/speakers/test_changes.py::test_distinct",),
    "VOICE_APART": (
        f"{_K}::test_voice_count",
        "tests/speakers/test_changes.py::test_newcomers",
        f"{_T}::test_a_voice_that_says_one_sentence_is_a_speaker",
    ),
    "TURN_STRAY": (f"{_T}::test_a_voice_that_says_one_sentence_is_a_speaker",),
    "DIALOGUE_LEAD": ("tests/speakers/test_speaker_cues.py::test_shown",),
    "AUTO_PASSES": ("tests/asr/test_precision.py::test_auto_measures_the_encoder_once_and_keeps_its_choice",),
    "AUTO_MAX_ERROR": ("tests/asr/test_precision.py::test_fastest_within_the_error_bound",),
}
