package main

import (
	"net"
	"testing"
	"time"
)

// The UDP mode answers each datagram with the name, ":" and the datagram.
func TestEchoUDP(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- echoUDP(pc, "e1") }()
	c, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "e1:ping" {
		t.Errorf("reply %q, %v; want e1:ping", buf[:n], err)
	}
	pc.Close()
	if err := <-done; err == nil {
		t.Error("echoUDP returned no error once its socket closed")
	}
}
