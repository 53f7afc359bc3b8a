"""The conversion passes, one module per construct; `autograph.pipeline` orders them."""
