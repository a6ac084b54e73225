"""Models: the offline tokenizer and weights, transformer encoders, the poly-encoder, the switch agent and the
masked-LM filler."""
