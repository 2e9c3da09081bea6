#!/usr/bin/env bash
# OpenVINO GenAI's WhisperPipeline on the project's embedded Whisper base, for benchmarks/speed.py --genai DIR.
# Offline: the weights come from the project, the tokenizer from openai-whisper's bundled tiktoken file.
#   bash benchmarks/genai/setup.sh DIR      (DIR gets venv/, base.pt, hf-base/, ov-base-int8/, ov-base-f32/)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; root="$(cd "$here/../.." && pwd)"
dir="$(mkdir -p "$1" && cd "$1" && pwd)"
python3.11 -m venv "$dir/venv"
pip="$dir/venv/bin/pip"
"$pip" install -q "openvino==2026.4.1" "openvino-genai==2026.4.1.0" "openvino-tokenizers==2026.4.1.0" \
    "optimum-intel[openvino]==2.2.0" "transformers==5.5.4" soundfile numpy openai-whisper
# optimum-intel pulls a CUDA torch and a torchvision that does not match the CPU torch: put the CPU build back
"$pip" install -q "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu || "$pip" install -q "torch==2.13.0"
"$pip" uninstall -q -y torchvision || true
"$pip" list 2>/dev/null | awk '/^(nvidia|cuda|triton)/{print $1}' | xargs -r "$pip" uninstall -q -y
# the project's embedded weights as an openai-whisper checkpoint (run with the project's own environment)
(cd "$root" && python - "$dir/base.pt" <<'PY'
import json, sys, torch
from convert.checkpoints import _embedded_parts, resolve_checkpoint
model = resolve_checkpoint(None).load()
heads = json.load(open(_embedded_parts()[1]))["alignment_heads"]
torch.save({"dims": model.dims.__dict__, "model_state_dict": model.state_dict(), "alignment_heads": heads}, sys.argv[1])
PY
)
"$dir/venv/bin/python" "$here/convert_to_hf.py" "$dir/base.pt" "$dir/hf-base"
for weights in int8 fp32; do
    HF_HUB_OFFLINE=1 "$dir/venv/bin/optimum-cli" export openvino --model "$dir/hf-base" \
        --task automatic-speech-recognition-with-past --weight-format "$weights" "$dir/ov-base-${weights/fp32/f32}"
done
