"""SGLang's command-line flags, as SGLang's own argument parser defines them.

`extract` asks a Python that has sglang installed (this machine's or a GPU host's, over a Transport)
for every option of `ServerArgs.add_cli_args`; the result is a versioned JSON file
(`sglang-<version>.json`, committed) or a per-version cache entry. `schema` loads it and validates
requested flags the way argparse would parse them, plus kvwatch's own safety rules; `argv` turns
validated flags into a command line and a launch command line back into flags.
"""
