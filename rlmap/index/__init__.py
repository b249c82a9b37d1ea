"""Stage 1, index: locate the source tree, read each file once with libcst into plain records, cache them."""
