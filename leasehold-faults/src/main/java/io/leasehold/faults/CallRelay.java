package io.leasehold.faults;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.HandlerRegistry;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * A plaintext gRPC relay between one client and one of its links to a core node: it accepts any
 * method and forwards it, as opaque bytes, to its target (the link), unary and streaming calls
 * alike, with the caller's headers, deadline and cancellation; the answers (headers, messages,
 * status, trailers) go back the same way. Nothing is parsed on the way, so the client and the
 * node see the same calls as without it.
 *
 * <p>It is there for {@link FaultType#LATE_COPY}: while its client's {@link LateCopies} is on, the
 * request of every unary write ({@link #WRITES}) is also handed to it, unchanged (same client id,
 * same call id), with the answer the original got, to be sent once more later.
 *
 * <p>It sits in front of the link, so cuts work as before: the link still carries every byte to
 * the node, and a late copy goes through a link of the same client. The client's own connection
 * ends at the relay, though, so the relay's connection to the link pings as the client's does
 * ({@code CoreClient.PING_INTERVAL}): a link that goes silent ends the calls on it, as the
 * client's pings would have.
 */
final class CallRelay implements AutoCloseable {

  /** The service whose writes are copied. */
  static final String SERVICE = "leasehold.v1.Leasehold";

  /**
   * The unary methods of the core that write through the log, each request with the client's
   * call id (a {@code Batch} carries one per op): the ones a late copy is made of.
   */
  static final Set<String> WRITES = Set.of(
      SERVICE + "/Grant", SERVICE + "/Revoke", SERVICE + "/Put", SERVICE + "/Delete", SERVICE + "/CompareAndSet",
      SERVICE + "/Acquire", SERVICE + "/Release", SERVICE + "/Batch");

  /** The largest message either way, as the client's ({@code CoreClient.MAX_INBOUND_BYTES}). */
  static final int MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

  /** Messages as they are on the wire. */
  static final MethodDescriptor.Marshaller<byte[]> BYTES = new MethodDescriptor.Marshaller<>() {
    @Override
    public InputStream stream(byte[] value) {
      return new ByteArrayInputStream(value);
    }

    @Override
    public byte[] parse(InputStream stream) {
      try {
        return stream.readAllBytes();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  };

  private final String name;
  private final InetSocketAddress target;
  private final ManagedChannel channel;
  private final LateCopies copies;
  private final Server server;

  private CallRelay(String name, InetSocketAddress target, LateCopies copies) throws IOException {
    this.name = name;
    this.target = target;
    this.copies = copies;
    this.channel = channelTo(target);
    this.server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
        .fallbackHandlerRegistry(new Forwarding())
        // The client pings every 10 s while a call is open; gRPC's default would end that
        // connection with GOAWAY too_many_pings.
        .permitKeepAliveTime(1, TimeUnit.SECONDS)
        .permitKeepAliveWithoutCalls(true)
        .maxInboundMessageSize(MAX_MESSAGE_BYTES)
        .build()
        .start();
  }

  /**
   * Starts a relay.
   *
   * @param name for messages, e.g. {@code c1->n2}
   * @param target where every call goes (the client's link to the node)
   * @param copies where copies of writes go; they are made only while it is on
   * @return the running relay, on a free port of 127.0.0.1
   */
  static CallRelay open(String name, InetSocketAddress target, LateCopies copies) {
    try {
      return new CallRelay(name, target, copies);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start the relay " + name, e);
    }
  }

  /** A plaintext channel as the client's: it pings while calls are open, to find a silent link. */
  static ManagedChannel channelTo(InetSocketAddress target) {
    return NettyChannelBuilder.forAddress(target.getHostString(), target.getPort())
        .usePlaintext()
        .keepAliveTime(10, TimeUnit.SECONDS)
        .keepAliveTimeout(5, TimeUnit.SECONDS)
        .maxInboundMessageSize(MAX_MESSAGE_BYTES)
        .build();
  }

  /** {@return the port it accepts on} */
  int port() {
    return server.getPort();
  }

  @Override
  public void close() {
    server.shutdownNow();
    channel.shutdownNow();
    try {
      server.awaitTermination(5, TimeUnit.SECONDS);
      channel.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return "CallRelay[" + name + " :" + port() + " -> " + target + "]";
  }

  /** Every method, whatever it is: a descriptor of bytes and a forwarding handler. */
  private final class Forwarding extends HandlerRegistry {
    @Override
    public ServerMethodDefinition<?, ?> lookupMethod(String methodName, String authority) {
      MethodDescriptor<byte[], byte[]> method = MethodDescriptor.<byte[], byte[]>newBuilder()
          .setFullMethodName(methodName)
          .setType(WRITES.contains(methodName) ? MethodDescriptor.MethodType.UNARY : MethodDescriptor.MethodType.UNKNOWN)
          .setRequestMarshaller(BYTES)
          .setResponseMarshaller(BYTES)
          .build();
      return ServerMethodDefinition.create(method, new Handler(WRITES.contains(methodName)));
    }
  }

  /**
   * Headers each side's transport writes itself (the deadline from the call options, the content
   * type, compression, the agent): dropped from what is passed on, so that none goes twice.
   */
  private static final java.util.List<Metadata.Key<String>> TRANSPORT_HEADERS = java.util.stream.Stream.of(
          "grpc-timeout", "content-type", "te", "user-agent", "grpc-encoding", "grpc-accept-encoding", "content-length")
      .map(k -> Metadata.Key.of(k, Metadata.ASCII_STRING_MARSHALLER))
      .toList();

  /** {@return {@code headers}, without {@link #TRANSPORT_HEADERS}} */
  private static Metadata passable(Metadata headers) {
    TRANSPORT_HEADERS.forEach(headers::discardAll);
    return headers;
  }

  private final class Handler implements ServerCallHandler<byte[], byte[]> {
    private final boolean write;

    Handler(boolean write) {
      this.write = write;
    }

    @Override
    public ServerCall.Listener<byte[]> startCall(ServerCall<byte[], byte[]> serverCall, Metadata headers) {
      Deadline deadline = Context.current().getDeadline();
      CallOptions options = deadline == null ? CallOptions.DEFAULT : CallOptions.DEFAULT.withDeadline(deadline);
      ClientCall<byte[], byte[]> clientCall = channel.newCall(serverCall.getMethodDescriptor(), options);
      passable(headers);
      Metadata copyHeaders = new Metadata();
      copyHeaders.merge(headers);
      Relayed relayed = new Relayed(serverCall, clientCall, write ? copyHeaders : null);
      clientCall.start(relayed.answers, headers);
      serverCall.request(1);
      clientCall.request(1);
      return relayed.requests;
    }
  }

  /**
   * One call relayed: each side asks the other for its next message only once it can take it
   * (flow control end to end).
   */
  private final class Relayed {
    final ServerCall<byte[], byte[]> serverCall;
    final ClientCall<byte[], byte[]> clientCall;
    /** The headers a late copy is sent with; null for a call that is no write. */
    final Metadata copyHeaders;
    final Requests requests = new Requests();
    final Answers answers = new Answers();
    /** The copy of this write, if one was made: it learns the original's answer. */
    volatile LateCopies.Copy copy;

    Relayed(ServerCall<byte[], byte[]> serverCall, ClientCall<byte[], byte[]> clientCall, Metadata copyHeaders) {
      this.serverCall = serverCall;
      this.clientCall = clientCall;
      this.copyHeaders = copyHeaders;
    }

    /** From the client, to the node. */
    final class Requests extends ServerCall.Listener<byte[]> {
      private boolean wanted; // guarded by this

      @Override
      public void onMessage(byte[] message) {
        if (copyHeaders != null) {
          copy = copies.offer(serverCall.getMethodDescriptor().getFullMethodName(), message, copyHeaders);
        }
        clientCall.sendMessage(message);
        synchronized (this) {
          if (clientCall.isReady()) {
            serverCall.request(1);
          } else {
            wanted = true;
          }
        }
      }

      @Override
      public void onHalfClose() {
        clientCall.halfClose();
      }

      @Override
      public void onCancel() {
        clientCall.cancel("the client cancelled the call", null);
      }

      @Override
      public void onReady() {
        answers.canSend();
      }

      synchronized void canSend() {
        if (wanted) {
          wanted = false;
          serverCall.request(1);
        }
      }
    }

    /** From the node, to the client. */
    final class Answers extends ClientCall.Listener<byte[]> {
      private boolean wanted; // guarded by this

      @Override
      public void onHeaders(Metadata headers) {
        serverCall.sendHeaders(passable(headers));
      }

      @Override
      public void onMessage(byte[] message) {
        LateCopies.Copy c = copy;
        if (c != null) {
          c.originalAnswered(Status.OK, message);
        }
        serverCall.sendMessage(message);
        synchronized (this) {
          if (serverCall.isReady()) {
            clientCall.request(1);
          } else {
            wanted = true;
          }
        }
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        LateCopies.Copy c = copy;
        if (c != null && !status.isOk()) {
          c.originalAnswered(status, null);
        }
        try {
          serverCall.close(status, trailers);
        } catch (IllegalStateException alreadyClosed) {
          // the client cancelled meanwhile
        }
      }

      @Override
      public void onReady() {
        requests.canSend();
      }

      synchronized void canSend() {
        if (wanted) {
          wanted = false;
          clientCall.request(1);
        }
      }
    }
  }
}
