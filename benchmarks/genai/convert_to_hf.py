"""Convert an openai-whisper checkpoint (setup.sh writes one from the project's embedded weights) to a Hugging Face
Whisper model directory, offline. Adapted from transformers' convert_openai_to_hf.py (not shipped in transformers 5.x):
tokenizer from openai-whisper's bundled multilingual.tiktoken, generation_config built by hand from openai-whisper's
own token ids / suppress rules instead of being downloaded from the Hub."""

import sys
from pathlib import Path

import torch
import whisper
from tiktoken.load import load_tiktoken_bpe
from transformers import (
    GenerationConfig,
    WhisperConfig,
    WhisperFeatureExtractor,
    WhisperForConditionalGeneration,
    WhisperProcessor,
    WhisperTokenizer,
    WhisperTokenizerFast,
)
from transformers.convert_slow_tokenizer import bytes_to_unicode
from transformers.models.whisper.tokenization_whisper import LANGUAGES

SRC, DST = Path(sys.argv[1]), Path(sys.argv[2])  # base.pt, the model directory to write

WHISPER_MAPPING = {
    "blocks": "layers",
    "mlp.0": "fc1",
    "mlp.2": "fc2",
    "mlp_ln": "final_layer_norm",
    ".attn.query": ".self_attn.q_proj",
    ".attn.key": ".self_attn.k_proj",
    ".attn.value": ".self_attn.v_proj",
    ".attn_ln": ".self_attn_layer_norm",
    ".attn.out": ".self_attn.out_proj",
    ".cross_attn.query": ".encoder_attn.q_proj",
    ".cross_attn.key": ".encoder_attn.k_proj",
    ".cross_attn.value": ".encoder_attn.v_proj",
    ".cross_attn_ln": ".encoder_attn_layer_norm",
    ".cross_attn.out": ".encoder_attn.out_proj",
    "decoder.ln.": "decoder.layer_norm.",
    "encoder.ln.": "encoder.layer_norm.",
    "token_embedding": "embed_tokens",
    "encoder.positional_embedding": "encoder.embed_positions.weight",
    "decoder.positional_embedding": "decoder.embed_positions.weight",
    "ln_post": "layer_norm",
}


def rename_keys(s):
    out = {}
    for key, value in s.items():
        new = key
        for k, v in WHISPER_MAPPING.items():
            if k in key:
                new = new.replace(k, v)
        out[new] = value
    return out


def _bpe(mergeable_ranks, token, max_rank=None):
    parts = [bytes([b]) for b in token]
    while True:
        min_idx = min_rank = None
        for i, pair in enumerate(zip(parts[:-1], parts[1:])):
            rank = mergeable_ranks.get(pair[0] + pair[1])
            if rank is not None and (min_rank is None or rank < min_rank):
                min_idx, min_rank = i, rank
        if min_rank is None or (max_rank is not None and min_rank >= max_rank):
            break
        parts = parts[:min_idx] + [parts[min_idx] + parts[min_idx + 1]] + parts[min_idx + 2 :]
    return parts


def convert_tiktoken_to_hf(tiktoken_file, num_languages, time_precision=0.02):
    bpe_ranks = load_tiktoken_bpe(str(tiktoken_file))
    byte_encoder = bytes_to_unicode()

    def s(b):
        return "".join(byte_encoder[ord(c)] for c in b.decode("latin-1"))

    vocab, merges = {}, []
    for token, rank in bpe_ranks.items():
        vocab[s(token)] = rank
        if len(token) == 1:
            continue
        merged = tuple(_bpe(bpe_ranks, token, max_rank=rank))
        if len(merged) == 2:
            merges.append(tuple(map(s, merged)))
    # transformers 5.x: WhisperTokenizer is the tokenizers-backed one and takes the vocab dict and merge pairs
    normalizer = Path(whisper.__file__).parent / "normalizers" / "english.json"
    tok = WhisperTokenizer(vocab=vocab, merges=merges, normalizer_file=str(normalizer))
    start = ["<|endoftext|>", "<|startoftranscript|>"]
    control = [
        "<|translate|>",
        "<|transcribe|>",
        "<|startoflm|>",
        "<|startofprev|>",
        "<|nospeech|>",
        "<|notimestamps|>",
    ]
    langs = [f"<|{k}|>" for k in list(LANGUAGES)[:num_languages]]
    stamps = ["<|%.2f|>" % (i * time_precision) for i in range(1500 + 1)]
    tok.add_tokens(start + langs + control, special_tokens=True)
    tok.add_tokens(stamps, special_tokens=False)
    return tok


ck = torch.load(SRC, map_location="cpu", weights_only=False)
dims = ck["dims"]
state = rename_keys(ck["model_state_dict"])
ffn_dim = state["decoder.layers.0.fc1.weight"].shape[0]
endoftext_id = 50257 if dims["n_vocab"] > 51865 else 50256  # sic, as in transformers' script; fixed below
is_multilingual = dims["n_vocab"] >= 51865
num_languages = dims["n_vocab"] - 51765 - int(is_multilingual)
assert is_multilingual and num_languages == 99, (dims, num_languages)
endoftext_id = 50257  # multilingual vocab: <|endoftext|> = 50257 (transformers' script gets 50256 only for .en models)

config = WhisperConfig(
    vocab_size=dims["n_vocab"],
    encoder_ffn_dim=ffn_dim,
    decoder_ffn_dim=ffn_dim,
    num_mel_bins=dims["n_mels"],
    d_model=dims["n_audio_state"],
    max_target_positions=dims["n_text_ctx"],
    encoder_layers=dims["n_audio_layer"],
    encoder_attention_heads=dims["n_audio_head"],
    decoder_layers=dims["n_text_layer"],
    decoder_attention_heads=dims["n_text_head"],
    max_source_positions=dims["n_audio_ctx"],
    eos_token_id=endoftext_id,
    bos_token_id=endoftext_id,
    pad_token_id=endoftext_id,
    decoder_start_token_id=endoftext_id + 1,
    begin_suppress_tokens=[220, endoftext_id],
    tie_word_embeddings=True,
)
model = WhisperForConditionalGeneration(config)
missing, unexpected = model.model.load_state_dict(state, strict=False)
assert not unexpected, unexpected
assert set(missing) <= {"encoder.embed_positions.weights", "decoder.embed_positions.weights"}, missing
model.tie_weights()
assert model.proj_out.weight.data_ptr() == model.model.decoder.embed_tokens.weight.data_ptr()

# --- tokenizer / processor from openai-whisper's bundled tiktoken file ---
tiktoken_file = Path(whisper.__file__).parent / "assets" / "multilingual.tiktoken"
tokenizer = convert_tiktoken_to_hf(tiktoken_file, num_languages)
fe = WhisperFeatureExtractor(feature_size=dims["n_mels"])
DST.mkdir(parents=True, exist_ok=True)
WhisperProcessor(tokenizer=tokenizer, feature_extractor=fe).save_pretrained(DST)
fast = WhisperTokenizerFast.from_pretrained(DST)
fast.save_pretrained(DST)

# --- generation config, from openai-whisper's tokenizer (same ids/rules openai's decoder uses) ---
otok = whisper.tokenizer.get_tokenizer(True, num_languages=num_languages)
suppress = sorted(
    set(otok.non_speech_tokens)
    | {otok.transcribe, otok.translate, otok.sot, otok.sot_prev, otok.sot_lm, otok.no_speech}
)
lang_to_id = {
    f"<|{code}|>": otok.special_tokens[f"<|{code}|>"] for code in list(whisper.tokenizer.LANGUAGES)[:num_languages]
}
for k, v in lang_to_id.items():
    assert fast.convert_tokens_to_ids(k) == v, (k, v)
heads = ck.get("alignment_heads")
gc = GenerationConfig(
    alignment_heads=heads,
    begin_suppress_tokens=[220, otok.eot],
    bos_token_id=otok.eot,
    decoder_start_token_id=otok.sot,
    eos_token_id=otok.eot,
    pad_token_id=otok.eot,
    forced_decoder_ids=None,
    is_multilingual=True,
    lang_to_id=lang_to_id,
    task_to_id={"transcribe": otok.transcribe, "translate": otok.translate},
    max_initial_timestamp_index=50,  # openai: max_initial_timestamp=1.0 s / 0.02
    max_length=dims["n_text_ctx"],
    no_timestamps_token_id=otok.no_timestamps,
    prev_sot_token_id=otok.sot_prev,
    return_timestamps=False,
    suppress_tokens=suppress,
)
model.generation_config = gc
model.save_pretrained(DST)
print("saved", DST, "suppress", len(suppress), "heads", heads)
