# The queue's client side, in gw_queue_job (all a client links): the socket
# client (client.h). Included from src/queue/CMakeLists.txt.
target_sources(gw_queue_job PRIVATE client.cc)
gw_add_test(gw_queue_client_tests SOURCES client_test.cc LIBS gw_queue_job)
