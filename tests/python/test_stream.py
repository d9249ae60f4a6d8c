"""LLM.generate_stream(): incremental outputs that add up to generate()'s result."""

from lemma import SamplingParams


def test_stream_deltas_add_up_to_generate(llm):
    params = SamplingParams(temperature=0, max_tokens=40)
    whole = llm.generate("Once upon a time", params)[0].outputs[0]
    pieces = list(llm.generate_stream("Once upon a time", params))
    assert len(pieces) > 3  # it streamed rather than returning once
    assert all(not p.finished for p in pieces[:-1]) and pieces[-1].finished
    assert "".join(p.outputs[0].text for p in pieces) == whole.text
    assert [t for p in pieces for t in p.outputs[0].token_ids] == whole.token_ids
    assert pieces[-1].outputs[0].finish_reason == whole.finish_reason
    assert llm._engine.pending() == (False, 0)  # a finished stream leaves nothing behind


def test_closing_a_stream_early_aborts_it(llm):
    params = SamplingParams(temperature=0, max_tokens=200, ignore_eos=True)
    stream = llm.generate_stream("The little dog", params)
    first = next(stream)
    assert not first.finished
    assert llm._engine.pending() == (True, 1)  # running, held for its reader
    stream.close()
    assert llm._engine.pending() == (False, 0)  # aborted and forgotten
    # The engine is free again: a later generate() completes.
    out = llm.generate("The little dog", SamplingParams(temperature=0, max_tokens=8))[0]
    assert out.finished and len(out.outputs[0].token_ids) <= 8


def test_streams_interleave(llm):
    params = SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)
    streams = {"One day": llm.generate_stream("One day", params),
               "The little dog": llm.generate_stream("The little dog", params)}
    ids = {prompt: [] for prompt in streams}
    while streams:  # one piece from each live stream in turn
        for prompt, stream in list(streams.items()):
            piece = next(stream, None)
            if piece is None:
                del streams[prompt]
            else:
                ids[prompt] += piece.outputs[0].token_ids
    for prompt, got in ids.items():
        assert got == llm.generate(prompt, params)[0].outputs[0].token_ids
