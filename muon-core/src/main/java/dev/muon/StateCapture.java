package dev.muon;

/** Which tensors a captured optimizer state holds: none (the layout only), handles on the live ones, or copies. */
enum StateCapture {
    NONE, HANDLES, COPIES
}
