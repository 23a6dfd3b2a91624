package io.leasehold.server;

/**
 * A node refused to start because starting would be unsafe, not because something failed: its
 * data directory does not fit how it was told to start (a node that lost its data, {@code
 * --bootstrap} on a directory that holds data), or another node of the cluster runs with another
 * election timeout. The message is one line, names the setting to look at, and nothing was
 * created or changed.
 */
public final class StartRefusedException extends IllegalStateException {

  private static final long serialVersionUID = 1L;

  /**
   * @param message one line: which node, what it found, and which setting decides
   */
  public StartRefusedException(String message) {
    super(message);
  }
}
