package io.leasehold.cli;

import java.io.IOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;

/**
 * Whether a node's ports are free, checked before anything starts: a node that finds its Raft
 * port taken is ended by Ratis ({@code Terminating with exit status 1}, after ~20 s of retries and
 * with a stack trace), before the command could print its own line or clean up.
 */
final class Ports {

  private Ports() {}

  /**
   * {@return whether something listens on {@code port} of {@code address} (null: every address)}
   * Only "address in use" counts: any other failure to bind (an address
   * not of this machine, no permission) is left for the node itself to report.
   */
  static boolean inUse(InetAddress address, int port) {
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress(address, port), 1);
      return false;
    } catch (BindException e) {
      return String.valueOf(e.getMessage()).toLowerCase(java.util.Locale.ROOT).contains("in use");
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }
}
