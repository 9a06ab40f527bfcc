"""Prints progress at every step: output must not change the grade."""

gb_read_per_step = 14.0
print("GB per step:", gb_read_per_step)
ms_per_token = 14.0
max_tokens_per_second = 71.43
understanding_answer = "A "


def decode_step_seconds(param_bytes, bandwidth):
    seconds = param_bytes / bandwidth
    print(f"one step reads {param_bytes:.3g} bytes in {seconds:.3g} s")
    return seconds


def tokens_per_second(param_bytes, bandwidth):
    rate = bandwidth / param_bytes
    print("rate:", rate)
    return rate


def generate(next_token, prompt, n):
    sequence = list(prompt)
    for step in range(n):
        token = next_token(sequence)
        print(f"step {step}: {len(sequence)} tokens in, picked {token}")
        sequence.append(token)
    return sequence
