"""A simulated SGLang server and client: the GPU stack this machine does not have."""
