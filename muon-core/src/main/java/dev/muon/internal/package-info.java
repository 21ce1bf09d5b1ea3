/** Implementation details shared between the public packages; not API, no compatibility promise. */
package dev.muon.internal;
